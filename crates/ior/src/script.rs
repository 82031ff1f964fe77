//! IOR's `-f` script files: the lines between `IOR START` and `IOR STOP`
//! are directives (as `-O` takes them, several per line separated by
//! commas, `#` starting a comment); `RUN` ends a test, and the next
//! directive starts a new one that begins as a copy of the one before
//! (two `RUN`s in a row run the same test twice). The command line's
//! options are the first test's starting point, as in IOR.
//!
//! ```
//! use iolab_ior::{script, params::{Globals, Params}};
//! let text = "IOR START\n  blockSize=4k, transferSize=1k\nRUN\n  segmentCount=2\nRUN\nIOR STOP\n";
//! let tests = script::parse(text, &Params::default(), &mut Globals::default()).unwrap();
//! assert_eq!(tests.len(), 2);
//! assert_eq!((tests[1].id, tests[1].block_bytes, tests[1].segments), (1, 4096, 2));
//! ```

use crate::directive;
use crate::params::{Globals, Params};

/// A line of a script that cannot be read: its number (from 1) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ScriptError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// True when `line` holds only `word` (case-insensitive) and blanks.
fn only(line: &str, word: &str) -> bool {
    line.trim().eq_ignore_ascii_case(word)
}

/// The tests of a script, each starting from the one before (the first
/// from `base`); `globals` takes `summaryFile` and the like.
pub fn parse(text: &str, base: &Params, globals: &mut Globals) -> Result<Vec<Params>, ScriptError> {
    let mut lines = text.lines().enumerate();
    if !lines.any(|(_, l)| only(l, "ior start")) {
        return Err(ScriptError {
            line: text.lines().count().max(1),
            message: "no 'IOR START' line".into(),
        });
    }
    let mut tests = vec![base.clone()];
    let mut after_run = false;
    let mut stopped = false;
    for (i, raw) in lines {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if only(line, "ior stop") {
            stopped = true;
            break;
        }
        if only(line, "run") {
            if after_run {
                push_copy(&mut tests);
            }
            after_run = true;
            continue;
        }
        if after_run {
            push_copy(&mut tests);
            after_run = false;
        }
        let last = tests.len() - 1;
        directive::apply_line(line, &mut tests[last], globals).map_err(|e| ScriptError {
            line: i + 1,
            message: e.to_string(),
        })?;
    }
    if !stopped {
        return Err(ScriptError {
            line: text.lines().count().max(1),
            message: "no 'IOR STOP' line".into(),
        });
    }
    Ok(tests)
}

/// A new test, a copy of the last one with the next id.
fn push_copy(tests: &mut Vec<Params>) {
    let mut next = tests[tests.len() - 1].clone();
    next.id = tests.len() as u32;
    tests.push(next);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Result<Vec<Params>, ScriptError> {
        parse(text, &Params::default(), &mut Globals::default())
    }

    #[test]
    fn tests_chain_and_repeat_as_ior_reads_them() {
        let t = run("junk before\nIOR START\n# c\napi=POSIX\n\nRUN\nRUN\nwriteFile=1 # w\nRUN\nIOR STOP\nignored=1\n").unwrap();
        assert_eq!(t.len(), 3);
        assert!(!t[1].write && t[2].write);
        assert_eq!(t.iter().map(|p| p.id).collect::<Vec<_>>(), [0, 1, 2]);
        // Without a RUN the directives still make the one test.
        assert_eq!(
            run("IOR START\nsegmentCount=3\nIOR STOP\n").unwrap()[0].segments,
            3
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = run("IOR START\nRUN\nbogus=1\nIOR STOP\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("bogus"), "{e}");
        assert!(run("api=POSIX\n")
            .unwrap_err()
            .message
            .contains("IOR START"));
        // Two directives a blank apart: IOR reads the first and drops
        // the second; iolab names the line and what follows the value.
        let e =
            run("IOR START\n testFile=/tmp/s1 blockSize=64k\n transferSize=16k\nRUN\nIOR STOP\n")
                .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("'blockSize=64k' follows"), "{e}");
        assert!(run("IOR START\nRUN\n")
            .unwrap_err()
            .message
            .contains("IOR STOP"));
    }
}
