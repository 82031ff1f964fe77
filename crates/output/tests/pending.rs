//! `remove_pending` in a process of its own: it removes every temporary
//! output of the process, which would race the unit tests' own.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

use iolab_output::{remove_pending, write_atomically, AtomicFile};
use std::io::Write;

/// What a process ending at once removes: the temporary files being
/// written, never an output already in place.
#[test]
fn pending_temporary_files_are_removed_and_outputs_kept() {
    let dir = tempfile::tempdir().unwrap();
    write_atomically(&dir.path().join("done.json"), b"{}").unwrap();
    let mut f = AtomicFile::create(&dir.path().join("half.json")).unwrap();
    f.write_all(b"{\"half").unwrap();
    let names = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names().len(), 2, "{:?}", names());
    remove_pending();
    assert_eq!(names(), ["done.json"]);
    drop(f);
    assert_eq!(names(), ["done.json"]);
}
