//! The stonewall status file (-x). A create run with -W writes the number
//! of items each task created; later -T/-E/-r runs read it so they work on
//! exactly those items. Format: the file-item count as a decimal number on
//! the first line (what mdtest writes), then optionally
//! `directories: <count>` when directories were stonewalled too.

use std::path::Path;

/// Item counts stored in a stonewall file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WallCounts {
    /// Files each task created.
    pub files: u64,
    /// Directories each task created, if recorded.
    pub dirs: Option<u64>,
}

/// Writes the file atomically (temporary file, then rename); on failure
/// the temporary file is removed, so nothing half-written stays.
pub fn write(path: &Path, c: WallCounts) -> std::io::Result<()> {
    let mut text = format!("{}\n", c.files);
    if let Some(d) = c.dirs {
        text.push_str(&format!("directories: {d}\n"));
    }
    crate::output::write_atomically(path, text.as_bytes())
}

/// Why a stonewall file (`-x`) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StonewallError {
    /// It cannot be read.
    #[error("-x {}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: iolab_core::input::InputError,
    },
    /// Its first line is not a count.
    #[error("-x {}: corrupt stonewall file: first line '{first}' is not an item count", path.display())]
    NotACount {
        /// The file.
        path: std::path::PathBuf,
        /// The line.
        first: String,
    },
    /// A later line is not `directories: N`.
    #[error("-x {}: corrupt stonewall file: unexpected line '{line}'", path.display())]
    Unexpected {
        /// The file.
        path: std::path::PathBuf,
        /// The line.
        line: String,
    },
}

/// Reads and checks a stonewall file; the error says what is wrong.
pub fn read(path: &Path) -> Result<WallCounts, StonewallError> {
    let text = iolab_core::input::read_text(path, iolab_core::input::TEXT_MAX_BYTES).map_err(
        |source| StonewallError::Read {
            path: path.to_path_buf(),
            source,
        },
    )?;
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").trim();
    let files = first
        .parse::<u64>()
        .map_err(|_| StonewallError::NotACount {
            path: path.to_path_buf(),
            first: first.to_string(),
        })?;
    let mut dirs = None;
    for l in lines.map(str::trim).filter(|l| !l.is_empty()) {
        let v = l
            .strip_prefix("directories:")
            .map(str::trim)
            .and_then(|v| v.parse().ok());
        match v {
            Some(v) => dirs = Some(v),
            None => {
                return Err(StonewallError::Unexpected {
                    path: path.to_path_buf(),
                    line: l.to_string(),
                })
            }
        }
    }
    Ok(WallCounts { files, dirs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let p = std::env::temp_dir().join(format!("iolab-sw-{}", std::process::id()));
        write(
            &p,
            WallCounts {
                files: 123,
                dirs: Some(7),
            },
        )
        .unwrap();
        assert_eq!(
            read(&p).unwrap(),
            WallCounts {
                files: 123,
                dirs: Some(7)
            }
        );
        std::fs::write(&p, "456\n").unwrap();
        assert_eq!(
            read(&p).unwrap(),
            WallCounts {
                files: 456,
                dirs: None
            }
        );
        for bad in ["", "abc\n", "12x\n", "5\ngarbage\n", "-3\n"] {
            std::fs::write(&p, bad).unwrap();
            assert!(
                read(&p).unwrap_err().to_string().contains("corrupt"),
                "{bad:?}"
            );
        }
        std::fs::remove_file(&p).unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("cannot read"));
    }
}
