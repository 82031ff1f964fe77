//! Shell completions and man pages, generated from the definitions that
//! parse: bash loads the completion script and completes a subcommand
//! and a survey; `man -l` renders every page `iolab man` writes.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{iolab, skip_or_fail, stderr, stdout, Scratch};
use std::process::Command;

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// What bash's completion function offers for `words` (the last one
/// being completed).
fn bash_complete(words: &str) -> String {
    let n = words.split(' ').count() - 1;
    let script = format!(
        "source <('{IOLAB}' completions bash) || exit 9
COMP_WORDS=({words}); COMP_CWORD={n}; COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}
_iolab iolab \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"
echo \"${{COMPREPLY[*]}}\""
    );
    let o = Command::new("bash").arg("-c").arg(script).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

#[test]
fn bash_completes_subcommands_and_their_arguments() {
    assert_eq!(bash_complete("iolab su"), "survey");
    let surveys = bash_complete("iolab survey o");
    assert!(
        surveys.contains("obdfilter") && surveys.contains("ost"),
        "{surveys}"
    );
    let opts = bash_complete("iolab xddcp --ti");
    assert_eq!(opts, "--timeout");
    for shell in ["zsh", "fish"] {
        let o = iolab(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stdout(&o).contains("survey"), "{shell}");
    }
    let o = iolab(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bash, zsh, fish"), "{}", stderr(&o));
}

#[test]
fn man_renders_every_page() {
    let s = Scratch::new("man");
    if Command::new("man").arg("--version").output().is_err() {
        skip_or_fail("man_renders_every_page", "man (man-db) is not installed");
        return;
    }
    let dir = s.path("man1");
    let o = iolab(&["man", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut names = common::tree(&dir);
    names.sort();
    for want in [
        "iolab.1",
        "iolab-mdtest.1",
        "iolab-xdd.1",
        "iolab-lst.1",
        "iolab-stats.1",
        "iolab-survey.1",
        "iolab-sweep.1",
        "iolab-report.1",
        "iolab-results.1",
        "iolab-xddcp.1",
        "iolab-timeserver.1",
        "iolab-gettime.1",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    for n in &names {
        let o = Command::new("man")
            .arg("-l")
            .arg(dir.join(n))
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        assert!(o.status.success(), "{n}: {}", stderr(&o));
        let text = stdout(&o);
        let stem = n.trim_end_matches(".1");
        assert!(text.contains("NAME") && text.contains(stem), "{n}:\n{text}");
    }
    // The legacy tools' pages list their tables' options.
    let page = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
    assert!(page("iolab-xdd.1").contains("reqsize"));
    assert!(page("iolab-mdtest.1").contains("items"));
}

/// A directory longer than the system takes (PATH_MAX, or a name over
/// NAME_MAX) is a usage error (exit 2), with nothing made.
#[test]
fn man_into_a_path_too_long_is_exit_2() {
    let s = Scratch::new("man-long");
    let deep = s.path(&"d/".repeat(2100));
    let o = iolab(&["man", deep.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("PATH_MAX"), "{}", stderr(&o));
    let wide = s.path(&"x".repeat(300));
    let o = iolab(&["man", wide.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("NAME_MAX"), "{}", stderr(&o));
    assert!(
        common::tree(&s.root).is_empty(),
        "{:?}",
        common::tree(&s.root)
    );
}

/// A file of a page's name that iolab did not write is never replaced:
/// exit 2 naming it, nothing written; nor is a link, or another page
/// under that name. An earlier run's pages are replaced.
#[test]
fn man_writes_over_no_file_it_did_not_write() {
    let s = Scratch::new("man-keep");
    let dir = s.path("man1");
    std::fs::create_dir(&dir).unwrap();
    let page = dir.join("iolab-xdd.1");
    let refused = |why: &str| {
        let o = iolab(&["man", dir.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("iolab-xdd.1") && e.contains(why), "{e}");
        assert_eq!(common::tree(&dir), vec!["iolab-xdd.1".to_string()]);
    };
    std::fs::write(&page, "precious\n").unwrap();
    refused("is not an iolab man page");
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "precious\n");
    std::fs::write(&page, ".TH IOLAB-MDTEST 1\n").unwrap();
    refused("is not an iolab man page");
    std::fs::remove_file(&page).unwrap();
    std::os::unix::fs::symlink(s.path("elsewhere"), &page).unwrap();
    refused("is not a regular file");
    assert!(!s.path("elsewhere").exists());
    std::fs::remove_file(&page).unwrap();
    for _ in 0..2 {
        let o = iolab(&["man", dir.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains(".TH IOLAB-XDD 1"));
}
