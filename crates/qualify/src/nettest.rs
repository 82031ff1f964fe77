//! The network tests as a plan writes them (`ping`, `brw write 4k`):
//! lst's test words, the phase lst reports them under, and the name of
//! the figure each gives.

/// A network test as the plan writes it (`brw write 4k`).
#[derive(Debug, Clone, PartialEq)]
pub struct NetTest {
    /// The figure's name within the layer (`ping`, `brw_write_4k`).
    pub name: String,
    /// lst's test words (`brw write size=4096`).
    pub words: Vec<String>,
    /// The phase lst reports it under (`ping`, `brw write`).
    pub phase: String,
    /// Bytes per RPC (brw).
    pub size: Option<u64>,
    /// As the plan wrote it, normalised (`brw write 4k`).
    pub label: String,
}

/// Below this, a brw test is about RPCs (seed 003's 4 KiB rates); from
/// it on, about bandwidth.
pub const BULK: u64 = 64 * 1024;

/// Reads `ping`, `brw read SIZE` or `brw write SIZE` (8 B to 16 MiB).
pub fn network_test(t: &str) -> Result<NetTest, crate::QualifyError> {
    use crate::QualifyError;
    let bad = |why: &str| QualifyError::Test {
        test: t.to_string(),
        why: why.to_string(),
    };
    let words: Vec<&str> = t.split_whitespace().collect();
    match words.as_slice() {
        ["ping"] => Ok(NetTest {
            name: "ping".into(),
            words: vec!["ping".into()],
            phase: "ping".into(),
            size: None,
            label: "ping".into(),
        }),
        ["brw", op @ ("read" | "write"), size] => {
            let bytes =
                iolab_core::units::parse_size(size).map_err(|source| QualifyError::TestSize {
                    test: t.to_string(),
                    source,
                })?;
            if !(8..=16 << 20).contains(&bytes) {
                return Err(bad("a brw size is 8 bytes to 16m"));
            }
            let short = size_name(bytes);
            Ok(NetTest {
                name: format!("brw_{op}_{short}"),
                words: vec!["brw".into(), op.to_string(), format!("size={bytes}")],
                phase: format!("brw {op}"),
                size: Some(bytes),
                label: format!("brw {op} {short}"),
            })
        }
        _ => Err(bad(
            "a test is `ping`, `brw read SIZE` or `brw write SIZE` (SIZE as 4k, 1m)",
        )),
    }
}

/// `4k`, `1m`, `512` for a byte count.
fn size_name(b: u64) -> String {
    match b {
        b if b % (1 << 20) == 0 => format!("{}m", b >> 20),
        b if b % 1024 == 0 => format!("{}k", b >> 10),
        b => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_tests_read_as_written() {
        let t = network_test("brw  write 1M").unwrap();
        assert_eq!(
            (t.name.as_str(), t.label.as_str()),
            ("brw_write_1m", "brw write 1m")
        );
        assert_eq!(t.words, ["brw", "write", "size=1048576"]);
        assert!(network_test("brw write 32m").is_err());
        assert!(network_test("pong").is_err());
    }
}
