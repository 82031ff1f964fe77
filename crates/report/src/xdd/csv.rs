//! The `-csvout` and `-combinedout` files, laid out as XDD 7 writes them
//! (guide section 5.2, "-csvout" and "-combinedout"):
//!
//! - columns: XDD's default columns (What, Pass, Target, Queue,
//!   Bytes_Xfered, Ops, Elapsed, Bandwidth, IOPS, Latency, Pct_CPU,
//!   Op_Type, Xfer_Size), or the `-outputformat` ones; iolab's extra
//!   latency columns stay in the text table only;
//! - `-csvout`: the same preamble as the text report (run-wide options,
//!   host, one block per target; XDD writes its option and target
//!   information to the CSV file too), a blank line, the header and units
//!   lines, the same rows as the text table
//!   (TARGET_PASS and TARGET_AVERAGE only with `-verbose`), then the
//!   `Ending time for this run, ...` line; the caller appends, as XDD opens
//!   the file for appending;
//! - `-combinedout`: just the COMBINED row, comma separated, appended to
//!   the file each run so runs collect in one file.

use super::columns::{selected_xdd, Column, Ctx};
use super::rows::{rows, Row};
use iolab_xdd::results::RunResults;

fn row_line(cols: &[Column], row: &Row, x: Ctx) -> String {
    crate::csvw::record(cols.iter().map(|c| (c.value)(row, x)))
}

/// The `-csvout` text for one run: preamble, header, units, rows, ending
/// time. A value of the preamble holding a comma or a quote (a target
/// path, a file name) is quoted there; in the text report it is not.
pub fn render(r: &RunResults) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write(r, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`render`] written to `w` row by row (a long run's rows are never
/// all in memory).
pub fn write(r: &RunResults, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let cols = selected_xdd(&r.config.global.outputformat, super::columns::is_e2e(r));
    let x = super::text::ctx(r);
    let mut s = super::preamble::render_csv(&r.config, &r.host, r.start_wall_ns, &r.targets);
    s.push('\n');
    s += &crate::csvw::record(cols.iter().map(|c| c.header));
    s += &crate::csvw::record(cols.iter().map(|c| c.units));
    w.write_all(s.as_bytes())?;
    for row in rows(r) {
        w.write_all(row_line(&cols, &row, x).as_bytes())?;
    }
    let end = format!(
        "Ending time for this run, {}\n",
        iolab_core::clock::format_local(r.end_wall_ns / 1_000_000_000, "%a %b %e %H:%M:%S %Y")
    );
    w.write_all(end.as_bytes())?;
    // A pass log that could not be read back whole leaves rows out.
    r.passes
        .error()
        .map_or(Ok(()), |e| Err(std::io::Error::other(e)))
}

/// The `-combinedout` text for one run: the COMBINED row only.
pub fn combined(r: &RunResults) -> String {
    let cols = selected_xdd(&r.config.global.outputformat, super::columns::is_e2e(r));
    row_line(&cols, &super::rows::combined(r), super::text::ctx(r))
}
