//! `iolab io500`: the resultdir's config.ini reruns the same run (the
//! phases' own sections kept, no section added that changes what a
//! rerun says), `--dry-run` says which phases the run would skip, and a
//! run writes over no result file it did not write (an earlier iolab
//! run's results are replaced).

#![allow(clippy::unwrap_used)]

mod common;

use common::{io500_small_ini as small_ini, iolab, stderr, stdout, Scratch};
use serde_json::Value;
use std::path::PathBuf;

/// Each phase of result.json with whether it ran.
fn ran(s: &Scratch) -> Vec<(String, bool)> {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("r/result.json")).unwrap()).unwrap();
    doc["payload"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let skipped = p["detail"].get("skipped").is_some();
            (p["name"].as_str().unwrap().to_string(), !skipped)
        })
        .collect()
}

/// A run with `[mdtest-hard-read] run = FALSE` and `[ior-hard-write] API
/// = POSIX`: r/config.ini keeps both (it dropped them, so a rerun ran
/// mdtest-hard-read) and adds no `[mdworkbench]` (a rerun said
/// "extended sections [mdworkbench] were read"); rerun into the same
/// resultdir, it runs the same phases and replaces the results.
#[test]
fn config_ini_reruns_the_same_run() {
    let s = Scratch::new("io500-rerun");
    let extra = "[mdtest-hard-read]\nrun = FALSE\n[ior-hard-write]\nAPI = POSIX\n";
    let ini = small_ini(&s, "x.ini", extra);
    let o = iolab(&["io500", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = ran(&s);
    assert!(
        first.contains(&("mdtest-hard-read".into(), false)),
        "{first:?}"
    );
    assert_eq!(first.iter().filter(|p| p.1).count(), 11, "{first:?}");
    let config = std::fs::read_to_string(s.path("r/config.ini")).unwrap();
    assert!(
        config.contains("[mdtest-hard-read]\nrun = FALSE\n"),
        "{config}"
    );
    assert!(
        config.contains("[ior-hard-write]\nAPI = POSIX\n"),
        "{config}"
    );
    assert!(!config.contains("[mdworkbench]"), "{config}");
    let again = s.path("again.ini");
    std::fs::copy(s.path("r/config.ini"), &again).unwrap();
    let dry = |p: &PathBuf| stdout(&iolab(&["io500", "--dry-run", p.to_str().unwrap()]));
    assert_eq!(dry(&again), dry(&ini));
    let o = iolab(&["io500", again.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("extended sections"), "{}", stderr(&o));
    assert_eq!(ran(&s), first);
    let orig = std::fs::read_to_string(s.path("r/config-orig.ini")).unwrap();
    assert_eq!(orig, config, "the rerun's results replaced the first's");
}

/// `--dry-run` of an ini whose `[ior-easy-write] run = FALSE` and
/// `[timestamp] run = FALSE`: ior-easy-write, ior-easy-read (which reads
/// what it writes) and find (which needs the timestamp file) are said
/// not to run, with no command; the others keep theirs.
#[test]
fn dry_run_says_which_phases_the_run_skips() {
    let s = Scratch::new("io500-dryskip");
    let ini = small_ini(
        &s,
        "x.ini",
        "[ior-easy-write]\nrun = FALSE\n[timestamp]\nrun = FALSE\n",
    );
    let o = iolab(&["io500", "--dry-run", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let block = |p: &str| {
        out.split("\n\n")
            .find(|b| b.starts_with(&format!("[{p}]\n")))
            .unwrap_or_default()
            .to_string()
    };
    for p in ["ior-easy-write", "ior-easy-read", "find"] {
        let b = block(p);
        assert!(
            b.contains("; not run: ") && !b.contains("exe ="),
            "{p}: {out}"
        );
    }
    assert!(block("ior-easy-write").contains("run = FALSE"), "{out}");
    assert!(block("ior-easy-read").contains("ior-easy-write"), "{out}");
    for p in ["mdtest-easy-write", "ior-hard-read", "mdtest-hard-delete"] {
        assert!(block(p).contains("\nexe = iolab "), "{p}: {out}");
    }
}

/// A file of a result file's name in a resultdir that is not timestamped
/// and that iolab io500 did not write (notes, the io500 app's results, a
/// link) is refused, exit 2, before anything is made; it was overwritten.
#[test]
fn result_files_iolab_did_not_write_are_refused() {
    let s = Scratch::new("io500-results");
    let ini = small_ini(&s, "x.ini", "");
    let r = s.path("r");
    std::fs::create_dir(&r).unwrap();
    for name in [
        "result.txt",
        "result_summary.txt",
        "result.json",
        "config.ini",
        "config-orig.ini",
    ] {
        let f = r.join(name);
        std::fs::write(&f, b"my notes\n").unwrap();
        let o = iolab(&["io500", ini.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&f.display().to_string()),
            "{}",
            stderr(&o)
        );
        assert!(!s.path("d").exists(), "{name}: the datadir was made");
        assert_eq!(std::fs::read(&f).unwrap(), b"my notes\n");
        std::fs::remove_file(&f).unwrap();
    }
    // A link, even to an iolab run's results, is not followed.
    let o = iolab(&["io500", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::rename(r.join("result.json"), s.path("elsewhere.json")).unwrap();
    std::os::unix::fs::symlink(s.path("elsewhere.json"), r.join("result.json")).unwrap();
    let o = iolab(&["io500", ini.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("result.json"), "{}", stderr(&o));
    assert!(r.join("result.json").is_symlink());
}
