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

/// Reads and checks a stonewall file; the error says what is wrong.
pub fn read(path: &Path) -> Result<WallCounts, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("-x {}: cannot read: {e}", path.display()))?;
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").trim();
    let files = first.parse::<u64>().map_err(|_| {
        format!(
            "-x {}: corrupt stonewall file: first line '{first}' is not an item count",
            path.display()
        )
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
                return Err(format!(
                    "-x {}: corrupt stonewall file: unexpected line '{l}'",
                    path.display()
                ))
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
            assert!(read(&p).unwrap_err().contains("corrupt"), "{bad:?}");
        }
        std::fs::remove_file(&p).unwrap();
        assert!(read(&p).unwrap_err().contains("cannot read"));
    }
}
