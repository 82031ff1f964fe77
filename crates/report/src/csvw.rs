//! CSV records through the csv crate, for every CSV writer of iolab: a
//! value holding a comma, a double quote or a line break is quoted as RFC
//! 4180 says (quotes doubled), never rewritten; every other value is
//! written as it is, so the layout of an ordinary run does not move.

/// A CSV document built in memory, one record at a time. Records may
/// differ in length (XDD's `-csvout` mixes preamble lines with the table).
pub struct CsvText {
    w: ::csv::Writer<Vec<u8>>,
}

impl Default for CsvText {
    fn default() -> Self {
        Self::new()
    }
}

impl CsvText {
    /// An empty document.
    pub fn new() -> Self {
        let w = ::csv::WriterBuilder::new()
            .flexible(true)
            .from_writer(Vec::new());
        Self { w }
    }

    /// Appends one record (a line ending in `\n`).
    pub fn record<I, T>(&mut self, fields: I)
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        // A flexible writer into memory has no failure to report: lengths
        // may differ and a Vec cannot refuse bytes.
        let _ = self.w.write_record(fields);
    }

    /// The document's text.
    pub fn finish(self) -> String {
        // The final flush cannot fail into a Vec.
        let bytes = self.w.into_inner().unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// One record as a line of CSV text.
pub fn record<I, T>(fields: I) -> String
where
    I: IntoIterator<Item = T>,
    T: AsRef<[u8]>,
{
    let mut c = CsvText::new();
    c.record(fields);
    c.finish()
}

/// `value` as one CSV field: quoted (quotes doubled) when it holds a
/// comma, a double quote or a line break, as it is otherwise.
pub fn field(value: &str) -> String {
    if value.is_empty() {
        // A lone empty field would be written `""` to tell an empty
        // record from none; as one field among others it is just empty.
        return String::new();
    }
    let line = record([value]);
    line.strip_suffix('\n').unwrap_or(&line).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_values_stay_and_special_ones_are_quoted() {
        assert_eq!(record(["a", "1.5", ""]), "a,1.5,\n");
        assert_eq!(
            record(["/x,y", "say \"hi\""]),
            "\"/x,y\",\"say \"\"hi\"\"\"\n"
        );
        assert_eq!(field("/plain/path"), "/plain/path");
        assert_eq!(field("a\nb"), "\"a\nb\"");
    }
}
