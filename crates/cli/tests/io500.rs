//! `iolab io500`: the issue's small ini with threads and under mpirun;
//! the 12 [RESULT] lines in order, the score recomputed from them,
//! [INVALID], an empty datadir afterwards, find's count against the
//! files mdtest-hard wrote, bytes against file sizes, mdtest counts
//! against what was made and removed; bad ini files refused with exit 2
//! and nothing created; --list, --dry-run, --cleanup, --store.

#![allow(clippy::unwrap_used)]

mod common;

use common::{iolab, stderr, stdout, tree, Scratch};
use serde_json::Value;
use std::path::Path;

const PHASES: [&str; 12] = [
    "ior-easy-write",
    "mdtest-easy-write",
    "ior-hard-write",
    "mdtest-hard-write",
    "find",
    "ior-easy-read",
    "mdtest-easy-stat",
    "ior-hard-read",
    "mdtest-hard-stat",
    "mdtest-easy-delete",
    "mdtest-hard-read",
    "mdtest-hard-delete",
];

/// The issue's small ini: stonewall 1 s, ior-easy 16 MiB per task,
/// ior-hard 100 segments, mdtest-easy 2000 and mdtest-hard 1000 files.
fn small_ini(s: &Scratch, extra: &str) -> std::path::PathBuf {
    let text = format!(
        "[global]\ndatadir = {}\nresultdir = {}\ntimestamp-datadir = FALSE\ntimestamp-resultdir = FALSE\n\
         [debug]\nstonewall-time = 1\n\
         [ior-easy]\ntransferSize = 1m\nblockSize = 16m\n\
         [ior-hard]\nsegmentCount = 100\n\
         [mdtest-easy]\nn = 2000\n\
         [mdtest-hard]\nn = 1000\n{extra}",
        s.path("data").display(),
        s.path("results").display()
    );
    let p = s.path("small.ini");
    std::fs::write(&p, text).unwrap();
    p
}

/// (name, value, INVALID) of each [RESULT] line.
fn result_lines(out: &str) -> Vec<(String, f64, bool)> {
    out.lines()
        .filter(|l| l.starts_with("[RESULT]"))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (
                w[1].to_string(),
                w[2].parse().unwrap(),
                l.ends_with(" [INVALID]"),
            )
        })
        .collect()
}

fn geo(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-5 + 1e-4 * a.abs().max(b.abs())
}

/// The score line agrees with the [RESULT] lines.
fn check_score(out: &str) {
    let res = result_lines(out);
    let names: Vec<&str> = res.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, PHASES, "{out}");
    assert!(res.iter().all(|r| r.1 > 0.0 && r.2), "{out}");
    let bw: Vec<f64> = res
        .iter()
        .filter(|r| r.0.starts_with("ior"))
        .map(|r| r.1)
        .collect();
    let md: Vec<f64> = res
        .iter()
        .filter(|r| !r.0.starts_with("ior"))
        .map(|r| r.1)
        .collect();
    assert_eq!((bw.len(), md.len()), (4, 8));
    let line = out.lines().find(|l| l.starts_with("[SCORE ]")).unwrap();
    assert!(line.ends_with(" [INVALID]"), "{line}");
    let w: Vec<&str> = line.split_whitespace().collect();
    // [SCORE ] Bandwidth X GiB/s : IOPS Y kiops : TOTAL Z [INVALID]
    let (x, y, z): (f64, f64, f64) = (
        w[3].parse().unwrap(),
        w[7].parse().unwrap(),
        w[11].parse().unwrap(),
    );
    assert!(close(x, geo(&bw)), "{x} vs {}", geo(&bw));
    assert!(close(y, geo(&md)), "{y} vs {}", geo(&md));
    assert!(close(z, (x * y).sqrt()), "{line}");
}

fn phase<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["payload"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap()
}

/// The figures are what was done: ior bytes = file sizes = the layout,
/// reads = writes, mdtest counts agree, find = the matching files.
fn check_figures(doc: &Value, tasks: u64) {
    for (w, r, xfer) in [
        ("ior-easy-write", "ior-easy-read", 1u64 << 20),
        ("ior-hard-write", "ior-hard-read", 47008),
    ] {
        let (w, r) = (
            &phase(doc, w)["detail"]["ior"],
            &phase(doc, r)["detail"]["ior"],
        );
        let per_task = w["transfers_per_task"].as_u64().unwrap();
        assert!(per_task > 0, "{w}");
        assert_eq!(w["bytes"], tasks * per_task * xfer, "{w}");
        assert_eq!(w["file_bytes"], w["bytes"], "{w}");
        assert_eq!(r["bytes"], w["bytes"], "{r}");
        // A read's figures are its own: the files it read (not 0), no
        // stonewall (it reads the write's count), its count on its line.
        assert_eq!(r["file_bytes"], w["file_bytes"], "{r}");
        assert_eq!(r["stonewall_hit"], false, "{r}");
    }
    for (w, r) in [
        ("ior-easy-write", "ior-easy-read"),
        ("ior-hard-write", "ior-hard-read"),
    ] {
        let n = &phase(doc, w)["detail"]["ior"]["transfers_per_task"];
        let exe = phase(doc, r)["command"].as_str().unwrap();
        let count = format!(" -O stoneWallingWearOutIterations={n} ");
        assert!(exe.contains(&count), "{r}: {exe}");
    }
    for base in ["mdtest-easy", "mdtest-hard"] {
        let made = &phase(doc, &format!("{base}-write"))["detail"]["mdtest"];
        let items = made["items"].as_u64().unwrap();
        assert!(items > 0);
        assert_eq!(items, tasks * made["items_per_task"].as_u64().unwrap());
        for p in ["stat", "delete"] {
            let d = &phase(doc, &format!("{base}-{p}"))["detail"]["mdtest"];
            assert_eq!(d["items"].as_u64().unwrap(), items, "{base}-{p}: {d}");
        }
    }
    let hard = &phase(doc, "mdtest-hard-write")["detail"]["mdtest"];
    assert_eq!(
        phase(doc, "mdtest-hard-read")["detail"]["mdtest"]["items"],
        hard["items"]
    );
    let k = hard["items_per_task"].as_u64().unwrap();
    let expected = (0..tasks)
        .flat_map(|t| (0..k).map(move |i| format!("file.mdtest.{t}.{i}")))
        .filter(|n| n.contains("01"))
        .count() as u64;
    let find = &phase(doc, "find")["detail"]["find"];
    assert_eq!(find["found"].as_u64().unwrap(), expected, "{find}");
    assert_eq!(doc["payload"]["valid"], false);
}

fn check_run(s: &Scratch, out: &str, tasks: u64) {
    check_score(out);
    let data = s.path("data");
    assert!(data.is_dir(), "the datadir the user made stays");
    assert!(tree(&data).is_empty(), "left: {:?}", tree(&data));
    let res = s.path("results");
    assert_eq!(
        tree(&res),
        [
            "config-orig.ini",
            "config.ini",
            "result.json",
            "result.txt",
            "result_summary.txt"
        ]
    );
    let summary = std::fs::read_to_string(res.join("result_summary.txt")).unwrap();
    assert_eq!(result_lines(&summary).len(), 12);
    check_score(&summary);
    let txt = std::fs::read_to_string(res.join("result.txt")).unwrap();
    assert!(
        txt.contains("; [ior-hard]") && txt.contains("[mdtest-hard-read]"),
        "{txt}"
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(res.join("result.json")).unwrap()).unwrap();
    assert_eq!(doc["tool"]["name"], "io500");
    assert_eq!(doc["payload"]["comm"]["tasks"], tasks);
    check_figures(&doc, tasks);
    check_stated(&doc);
}

/// The envelope states each phase's score as a figure (issue 31: the
/// store reads no current document's payload for them).
fn check_stated(doc: &Value) {
    let phases = doc["payload"]["phases"].as_array().unwrap();
    let figures = doc["figures"].as_array().unwrap();
    assert_eq!(figures.len(), phases.len(), "{figures:?}");
    for (f, p) in figures.iter().zip(phases) {
        assert_eq!(f["phase"], p["name"], "{f}");
        assert_eq!(f["metric"], "score", "{f}");
        assert_eq!(f["unit"], p["unit"], "{f}");
        assert_eq!(f["stat"]["mean"], p["score"], "{f}");
    }
}

#[test]
fn small_ini_with_threads() {
    let s = Scratch::new("io500-threads");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(&s, "");
    let store = s.path("store.sqlite");
    let o = iolab(&[
        "io500",
        "--tasks",
        "3",
        "--store",
        store.to_str().unwrap(),
        ini.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    check_run(&s, &stdout(&o), 3);
    let csv = stdout(&iolab(&[
        "results",
        "--store",
        store.to_str().unwrap(),
        "export",
        "1",
        "--csv",
    ]));
    for p in PHASES {
        assert_eq!(csv.matches(&format!(",{p},score,")).count(), 1, "{csv}");
    }
}

/// `mpirun -n 2 iolab io500`: 2 ranks of 1 task, the same checks.
#[cfg(feature = "mpi")]
#[test]
fn small_ini_under_mpirun() {
    use std::process::Command;
    if Command::new("mpirun").arg("--version").output().is_err() {
        return common::skip_or_fail("io500_mpirun", "mpirun not installed");
    }
    let s = Scratch::new("io500-mpi");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(&s, "");
    let mut c = Command::new("mpirun");
    let _session = common::OmpiSession::attach(&mut c);
    let o = c
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            "2",
            env!("CARGO_BIN_EXE_iolab"),
            "io500",
        ])
        .arg(&ini)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.matches("[SCORE ]").count(), 1, "one rank prints: {out}");
    check_run(&s, &out, 2);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("results/result.json")).unwrap())
            .unwrap();
    assert_eq!(doc["payload"]["comm"]["ranks"], 2);
}

/// `mpirun -n 2 iolab io500` where rank 1 alone fails ior-easy-write
/// (a file size limit: EFBIG) and rank 0 does not: rank 0's result.json,
/// the one written, has rank 1's operation, path and errno and says it
/// was task 1 (it had op "peer" and a null path), and so does the
/// phase's detail.
#[cfg(feature = "mpi")]
#[test]
fn a_failure_on_rank_1_reaches_rank_0s_json_whole() {
    let s = Scratch::new("io500-mpi-peer");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(&s, "");
    let ini = ini.display().to_string();
    let Some((mut c, _session)) = common::mpirun_rank1_file_limit(&["io500", &ini]) else {
        return;
    };
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("results/result.json")).unwrap())
            .unwrap();
    let f = &doc["outcome"];
    let file = s.path("data/ior-easy/ior_file_easy.00000001");
    let path = common::assert_task_failure(f, 1, "write", libc::EFBIG);
    assert_eq!(path, file.display().to_string(), "{f}");
    let failed = phase(&doc, "ior-easy-write")["detail"]["failed"]
        .as_str()
        .unwrap_or_default();
    assert!(
        failed.starts_with(&format!("write {}: task 1: ", file.display())),
        "{failed}"
    );
}

/// The files named `*01*` among those mdtest made (`file.mdtest.T.I`).
fn matching_01(doc: &Value, base: &str, tasks: u64) -> u64 {
    let per_task = phase(doc, &format!("{base}-write"))["detail"]["mdtest"]["items_per_task"]
        .as_u64()
        .unwrap();
    (0..tasks)
        .flat_map(|t| (0..per_task).map(move |i| format!("file.mdtest.{t}.{i}")))
        .filter(|n| n.contains("01"))
        .count() as u64
}

/// md-workbench's sizing in the extended tests: 120 objects per set
/// (so that `file-101`, named `*01*` and 3901 bytes, is among those made
/// before the timestamp file, which find must not count), 60 per
/// iteration.
const MDWB: &str = "[mdworkbench]\nprecreatePerSet = 120\nfilesPerProc = 60\n";

/// `--mode=extended`: md-workbench, find-easy, find-hard and
/// ior-rnd4K-easy-read run in the io500 app's order, the [SCORE ] line
/// is still the 12 scored phases', [SCOREX] adds the two finds and
/// mdworkbench-bench; md-workbench's objects are all made, moved and
/// removed.
#[test]
fn extended_mode_with_threads() {
    let s = Scratch::new("io500-extended");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(&s, MDWB);
    let o = iolab(&[
        "io500",
        "--tasks",
        "2",
        "--mode=extended",
        ini.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    check_extended(&s, &stdout(&o), 2);
}

/// The app's order of an extended run: `[RESULT]` lines and the
/// unscored `[      ]` ones.
const EXTENDED_ORDER: [(&str, bool); 18] = [
    ("ior-easy-write", true),
    ("mdtest-easy-write", true),
    ("mdworkbench-create", false),
    ("find-easy", true),
    ("ior-hard-write", true),
    ("mdtest-hard-write", true),
    ("find", true),
    ("find-hard", true),
    ("mdworkbench-bench", true),
    ("ior-easy-read", true),
    ("mdtest-easy-stat", true),
    ("ior-hard-read", true),
    ("mdtest-hard-stat", true),
    ("mdworkbench-delete", false),
    ("mdtest-easy-delete", true),
    ("mdtest-hard-read", true),
    ("mdtest-hard-delete", true),
    ("ior-rnd4K-easy-read", false),
];

/// The checks of an extended run of `tasks` tasks (stdout `out`).
fn check_extended(s: &Scratch, out: &str, tasks: u64) {
    let lines: Vec<(String, bool, &str)> = out
        .lines()
        .filter(|l| l.starts_with("[RESULT]") || l.starts_with("[      ]"))
        .map(|l| {
            let name = l[8..].split_whitespace().next().unwrap().to_string();
            (name, l.starts_with("[RESULT]"), l)
        })
        .collect();
    let got: Vec<(&str, bool)> = lines.iter().map(|(n, r, _)| (n.as_str(), *r)).collect();
    assert_eq!(got, EXTENDED_ORDER, "{out}");
    for (name, _, l) in &lines {
        let unit = if name.starts_with("ior") {
            " GiB/s "
        } else {
            " kIOPS "
        };
        assert!(l.contains(unit), "{l}");
    }
    let res = result_lines(out);
    // [SCORE ] from the 12 scored lines alone.
    let standard: String = out
        .lines()
        .filter(|l| {
            !l.contains(" find-easy ") && !l.contains(" find-hard ") && !l.contains(" mdworkbench-")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    check_score(&standard);
    // [SCOREX]: the same bandwidth, the IOPS mean of 11.
    let x = out.lines().find(|l| l.starts_with("[SCOREX]")).unwrap();
    assert!(x.ends_with(" [INVALID]"), "{x}");
    let w: Vec<f64> = [2, 6, 10]
        .iter()
        .map(|&i| x.split_whitespace().nth(i).unwrap().parse().unwrap())
        .collect();
    let md: Vec<f64> = res
        .iter()
        .filter(|r| !r.0.starts_with("ior"))
        .map(|r| r.1)
        .collect();
    assert_eq!(md.len(), 11);
    assert!(close(w[1], geo(&md)), "{x} vs {}", geo(&md));
    assert!(close(w[2], (w[0] * w[1]).sqrt()), "{x}");
    // The figures are what was done.
    assert!(
        tree(&s.path("data")).is_empty(),
        "{:?}",
        tree(&s.path("data"))
    );
    let res_dir = s.path("results");
    let summary = std::fs::read_to_string(res_dir.join("result_summary.txt")).unwrap();
    assert!(summary.contains("[SCOREX]") && summary.contains("ior-rnd4K-easy-read"));
    assert!(
        summary.contains("[      ]   mdworkbench-create "),
        "{summary}"
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(res_dir.join("result.json")).unwrap())
            .unwrap();
    check_figures(&doc, tasks);
    check_mdworkbench(&doc, tasks, (120, 60));
    let txt = std::fs::read_to_string(res_dir.join("result.txt")).unwrap();
    assert!(
        txt.contains("precreatePerSet = 120")
            && txt.contains("scoreIteration0 = ")
            && txt.contains(&format!(
                "iteration0-latency-read = count:{} min:",
                tasks * 10 * 60
            )),
        "{txt}"
    );
    let found = |n: &str| phase(&doc, n)["detail"]["find"]["found"].as_u64().unwrap();
    assert_eq!(found("find-easy"), matching_01(&doc, "mdtest-easy", tasks));
    assert_eq!(found("find-hard"), matching_01(&doc, "mdtest-hard", tasks));
    for p in doc["payload"]["phases"].as_array().unwrap() {
        assert_eq!(
            p["phase"], p["name"],
            "the JSON names a phase as IO500 does"
        );
    }
    let r = &phase(&doc, "ior-rnd4K-easy-read")["detail"]["ior"];
    let n = r["transfers_per_task"].as_u64().unwrap();
    assert!(n > 0, "{r}");
    assert_eq!(r["bytes"].as_u64().unwrap(), tasks * n * 4096, "{r}");
    assert_eq!(doc["payload"]["valid_extended"], false);
    assert!(doc["payload"]["score_extended"]["iops"].as_f64().unwrap() > 0.0);
}

/// md-workbench's counts: `tasks` x 10 sets of `p` objects made, each
/// of the 2 iterations stats, reads, deletes and makes `i` per set, the
/// cleanup deletes `p` per set and the sets: as many objects and sets
/// removed as made, every byte written read or removed.
fn check_mdworkbench(doc: &Value, tasks: u64, (p, i): (u64, u64)) {
    let figures = |name: &str| -> Vec<Value> {
        let d = &phase(doc, name)["detail"]["mdworkbench"];
        assert_eq!(
            (
                d["precreate_per_set"].as_u64(),
                d["files_per_proc"].as_u64()
            ),
            (Some(p), Some(i))
        );
        assert!(d["failure"].is_null(), "{d}");
        d["iterations"].as_array().unwrap().clone()
    };
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap();
    let create = figures("mdworkbench-create");
    let bench = figures("mdworkbench-bench");
    let delete = figures("mdworkbench-delete");
    assert_eq!((create.len(), bench.len(), delete.len()), (1, 2, 1));
    let sets = tasks * 10;
    assert_eq!(n(&create[0], "dsets_created"), sets);
    assert_eq!(n(&create[0], "objects_created"), sets * p);
    assert_eq!(n(&create[0], "bytes_written"), sets * p * 3901);
    for it in &bench {
        for k in [
            "objects_stated",
            "objects_read",
            "objects_deleted",
            "objects_created",
        ] {
            assert_eq!(n(it, k), sets * i, "{k}: {it}");
        }
        assert_eq!(n(it, "bytes_read"), sets * i * 3901);
        for op in ["stat", "read", "delete", "create"] {
            assert_eq!(it["latency"][op]["count"], sets * i, "{op}: {it}");
        }
        assert!(it["ops_per_sec"].as_f64().unwrap() > 0.0);
    }
    let made = n(&create[0], "objects_created")
        + bench.iter().map(|it| n(it, "objects_created")).sum::<u64>();
    let removed = n(&delete[0], "objects_deleted")
        + bench.iter().map(|it| n(it, "objects_deleted")).sum::<u64>();
    assert_eq!(made, removed);
    assert_eq!(n(&delete[0], "dsets_deleted"), sets);
    // The score is the second iteration's rate, in kIOPS.
    let score = phase(doc, "mdworkbench-bench")["score"].as_f64().unwrap();
    assert!(close(
        score,
        bench[1]["ops_per_sec"].as_f64().unwrap() / 1000.0
    ));
}

/// `[mdworkbench]`'s keys are read and checked before anything is made;
/// `run = FALSE` leaves md-workbench out; `--dry-run` prints its
/// command lines; the sections of other versions of the app are still
/// refused by extended mode.
#[test]
fn mdworkbench_keys_dry_run_and_refusals() {
    let s = Scratch::new("io500-mdwb-keys");
    for (extra, needle) in [
        ("[mdworkbench]\nprecreatePerSet = 10\n", "filesPerProc"),
        (
            "[mdworkbench]\nprecreatePerSet = 10\nfilesPerProc = 20\n",
            "filesPerProc = 20",
        ),
        ("[mdworkbench]\nwaitingTime = soon\n", "waitingTime"),
        ("[mdworkbench]\nobjectSize = 1\n", "objectSize"),
        ("[mdworkbench-bench]\nrun = maybe\n", "maybe"),
        ("[ior-rnd1MB]\nblockSize = 1g\n", "[ior-rnd1MB]"),
    ] {
        let ini = small_ini(&s, extra);
        let o = iolab(&[
            "io500",
            "--tasks",
            "2",
            "--mode=extended",
            ini.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{extra}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        assert!(stderr(&o).contains(needle), "{extra}: {}", stderr(&o));
        assert!(!s.path("data").exists() && !s.path("results").exists());
    }
    let ini = small_ini(&s, MDWB);
    let o = iolab(&[
        "io500",
        "--dry-run",
        "--mode=extended",
        ini.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for (p, tail) in [
        ("mdworkbench-create", "-P=120 -I=60 -1 "),
        ("mdworkbench-bench", "-P=120 -I=60 -2 -R=2 -X "),
        ("mdworkbench-delete", "-P=120 -I=60 -3 "),
    ] {
        assert!(
            out.contains(&format!("[{p}]\nexe = md-workbench -a POSIX -o=")),
            "{out}"
        );
        assert!(out.contains(tail), "{tail}: {out}");
    }
    // Without the two keys the app sizes them from mdtest-easy-write.
    let ini = small_ini(&s, "");
    let out = stdout(&iolab(&[
        "io500",
        "--dry-run",
        "--mode=extended",
        ini.to_str().unwrap(),
    ]));
    assert!(
        out.contains("-P=N -I=N (N = mdtest-easy-write's rate x 1 s"),
        "{out}"
    );
    assert!(!s.path("data").exists() && !s.path("results").exists());
    // run = FALSE: no md-workbench line, nothing of it made.
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(
        &s,
        "[mdworkbench]\nrun = FALSE\n[ior-easy]\nrun = FALSE\n[find-easy]\nrun = FALSE\n",
    );
    let o = iolab(&[
        "io500",
        "--tasks",
        "2",
        "--mode=extended",
        ini.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("results/result.json")).unwrap())
            .unwrap();
    assert_eq!(
        phase(&doc, "mdworkbench-bench")["detail"]["skipped"],
        "run = FALSE in the ini"
    );
    assert!(tree(&s.path("data")).is_empty());
}

/// `mpirun -n 2 iolab io500 --tasks 2 --mode=extended`: the same checks
/// on 2 ranks x 2 threads (md-workbench's sets worked on by tasks of the
/// other rank), one rank printing.
#[cfg(feature = "mpi")]
#[test]
fn extended_mode_under_mpirun() {
    use std::process::Command;
    if Command::new("mpirun").arg("--version").output().is_err() {
        return common::skip_or_fail("io500_extended_mpirun", "mpirun not installed");
    }
    let s = Scratch::new("io500-extended-mpi");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(&s, MDWB);
    let mut c = Command::new("mpirun");
    let _session = common::OmpiSession::attach(&mut c);
    let o = c
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            "2",
            env!("CARGO_BIN_EXE_iolab"),
            "io500",
            "--tasks",
            "2",
            "--mode=extended",
        ])
        .arg(&ini)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.matches("[SCOREX]").count(), 1, "one rank prints: {out}");
    check_extended(&s, &out, 4);
}

fn refused(s: &Scratch, extra: &str, needle: &str) {
    let ini = small_ini(s, extra);
    let o = iolab(&["io500", "--tasks", "2", ini.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{extra}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    assert!(stderr(&o).contains(needle), "{extra}: {}", stderr(&o));
    assert!(
        !s.path("data").exists() && !s.path("results").exists(),
        "{extra}: something was created"
    );
}

#[test]
fn bad_ini_is_exit_2_with_nothing_created() {
    let s = Scratch::new("io500-bad");
    refused(&s, "[ior-medium]\nrun = TRUE\n", "[ior-medium]");
    refused(&s, "[find]\ncolour = blue\n", "colour");
    refused(&s, "[mdtest-easy-stat]\nrun = perhaps\n", "perhaps");
    refused(&s, "[ior-easy-read]\nAPI = S3\n", "ior-easy-read");
    refused(
        &s,
        "[find]\nexternal-script = /bin/true\n",
        "not implemented",
    );
    refused(&s, "just words\n", "not 'key = value'");
    // The app's booleans are true/false/1/0 and its numbers digits only.
    refused(&s, "[global]\nscc = yes\n", "scc = yes");
    refused(&s, "[global]\ndrop-caches = on\n", "drop-caches = on");
    refused(&s, "[mdtest-easy-stat]\nrun = off\n", "run = off");
    refused(&s, "[ior-hard]\nsegmentCount = +10\n", "segmentCount = +10");
    // blockSize not a multiple of transferSize (given again: twice is refused too).
    refused(&s, "[ior-easy]\nblockSize = 3m\n", "given twice");
    // A resultdir that cannot be made (a file is in its way).
    std::fs::write(s.path("afile"), b"x").unwrap();
    let text = std::fs::read_to_string(small_ini(&s, "")).unwrap().replace(
        &format!("resultdir = {}", s.path("results").display()),
        &format!("resultdir = {}/results", s.path("afile").display()),
    );
    std::fs::write(s.path("small.ini"), text).unwrap();
    let o = iolab(&["io500", s.path("small.ini").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("resultdir"), "{}", stderr(&o));
    assert!(!s.path("data").exists());
    let o = iolab(&["io500", s.path("missing.ini").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing.ini"), "{}", stderr(&o));
}

#[test]
fn list_prints_every_key_with_its_default() {
    let o = iolab(&["io500", "--list"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for needle in [
        "[global]",
        "datadir = ./datafiles",
        "stonewall-time = 300",
        "transferSize = 2m",
        "segmentCount = 10000000",
        "[mdtest-hard-delete]",
        "[mdworkbench]",
        "waitingTime = 0.0",
        "precreatePerSet = \n",
        "[mdworkbench-bench]",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
}

#[test]
fn dry_run_prints_commands_and_creates_nothing() {
    let s = Scratch::new("io500-dry");
    let ini = small_ini(&s, "");
    let o = iolab(&["io500", "--dry-run", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for p in PHASES {
        assert!(out.contains(&format!("[{p}]")), "{p}: {out}");
    }
    assert!(
        out.contains("iolab mdtest -n 1000 -t -w 3901 -e 3901"),
        "{out}"
    );
    // The app's -Y (sync, timed) on both writes, -X on the hard read.
    let line = |p: &str| {
        out.lines()
            .skip_while(|l| !l.contains(&format!("[{p}]")))
            .nth(1)
            .unwrap_or_default()
            .to_string()
    };
    for p in ["mdtest-easy-write", "mdtest-hard-write"] {
        assert!(line(p).contains(" -C -Y -W 1"), "{p}: {out}");
    }
    assert!(line("mdtest-hard-read").contains(" -E -X"), "{out}");
    assert!(!line("mdtest-easy-stat").contains(" -Y"), "{out}");
    assert!(!s.path("data").exists() && !s.path("results").exists());
    // A datadir with a space: the lines still run as printed.
    let spaced = s.path("my data");
    let text = std::fs::read_to_string(&ini).unwrap().replace(
        &s.path("data").display().to_string(),
        &spaced.display().to_string(),
    );
    std::fs::write(&ini, text).unwrap();
    let o = iolab(&["io500", "--dry-run", ini.to_str().unwrap()]);
    let out = stdout(&o);
    let quoted = format!("-d '{}/mdtest-easy'", spaced.display());
    assert!(out.contains(&quoted), "{out}");
    let quoted = format!("-o '{}/ior-easy/ior_file_easy'", spaced.display());
    assert!(out.contains(&quoted), "{out}");
}

/// `[debug] pause-dir`: while `<pause-dir>/ior-easy-write` exists the
/// run waits before that phase (nothing of it is made), then goes on
/// once the file is removed; the run is invalid, naming the key.
#[test]
fn pause_dir_holds_a_phase_while_its_file_exists() {
    use std::time::{Duration, Instant};
    let s = Scratch::new("io500-pause");
    std::fs::create_dir(s.path("data")).unwrap();
    let hold = s.path("pause/ior-easy-write");
    touch(&hold);
    let extra = format!("[debug]\npause-dir = {}\n", s.path("pause").display());
    let ini = small_ini(&s, "").with_file_name("pause.ini");
    let text = std::fs::read_to_string(s.path("small.ini"))
        .unwrap()
        .replace("[debug]\n", &extra);
    std::fs::write(&ini, text).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["io500", "--tasks", "2"])
        .arg(&ini)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let easy = s.path("data/ior-easy");
    let t0 = Instant::now();
    while !easy.is_dir() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let waiting = child.try_wait().unwrap().is_none();
    let made = tree(&easy);
    std::fs::remove_file(&hold).unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let o = child.wait_with_output().unwrap();
    assert!(waiting && made.is_empty(), "not held: {made:?}");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("[SCORE ]"), "{}", stdout(&o));
    let txt = std::fs::read_to_string(s.path("results/result.txt")).unwrap();
    assert!(txt.contains("invalid = [debug] pause-dir is set"), "{txt}");
}

fn touch(p: &Path) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, b"x").unwrap();
}

#[test]
fn cleanup_removes_what_a_killed_run_left_and_nothing_else() {
    let s = Scratch::new("io500-clean");
    let ini = small_ini(&s, "");
    let d = s.path("data");
    touch(&d.join("mdtest-hard/test-dir.0-0/mdtest_tree.0/file.mdtest.1.7"));
    touch(&d.join("ior-easy/ior_file_easy.00000001"));
    touch(&d.join("ior-hard/file"));
    // As a run makes it: empty (a file with data is not a run's).
    std::fs::write(d.join("timestampfile"), b"").unwrap();
    touch(&d.join("mdworkbench/1_3/file-7"));
    touch(&d.join("mdtest-easy/mine.txt"));
    // A normal run refuses a datadir with leftovers.
    let o = iolab(&["io500", ini.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--cleanup"), "{}", stderr(&o));
    assert!(!s.path("results").exists());
    let o = iolab(&["io500", "--cleanup", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(tree(&d), vec!["mdtest-easy/", "mdtest-easy/mine.txt"]);
}

/// Ctrl-C during mdtest-easy-write: the run stops, removes everything it
/// made, writes its (invalid) results and exits 130.
#[test]
fn interrupted_run_cleans_up() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let s = Scratch::new("io500-int");
    std::fs::create_dir(s.path("data")).unwrap();
    // A 600 s stonewall and a million files: the phase outlasts the test.
    let ini = small_ini(&s, "[debug]\n[mdtest-easy]\n");
    let text = std::fs::read_to_string(&ini)
        .unwrap()
        .replace("stonewall-time = 1", "stonewall-time = 600")
        .replace("n = 2000", "n = 1000000");
    std::fs::write(&ini, text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["io500", "--tasks", "2"])
        .arg(&ini)
        .env("CI", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // mdtest-easy-write starts once ior-easy-write's line is out.
    let first = lines
        .by_ref()
        .map(|l| l.unwrap())
        .find(|l| l.starts_with("[RESULT]"))
        .unwrap();
    assert!(first.contains("ior-easy-write"), "{first}");
    // Once it has made its first file, the phase that runs is
    // mdtest-easy-write (a stop before it starts skips it instead).
    let made = || {
        tree(&s.path("data"))
            .iter()
            .any(|p| p.contains("mdtest-easy") && p.contains("file.mdtest"))
    };
    for _ in 0..6000 {
        if made() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(
        tree(&s.path("data")).is_empty(),
        "left: {:?}",
        tree(&s.path("data"))
    );
    let score = rest.iter().find(|l| l.starts_with("[SCORE ]")).unwrap();
    assert!(score.ends_with("[INVALID]"), "{score}");
    // The stopped phase is said as interrupted, not as failed (it read
    // "mdtest-easy-write failed: Interrupted").
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("results/result.json")).unwrap())
            .unwrap();
    assert!(
        err.contains("iolab io500: mdtest-easy-write interrupted"),
        "{err}\n{doc}"
    );
    assert!(!err.contains("failed"), "{err}");
    assert_eq!(phase(&doc, "mdtest-easy-write")["detail"], "interrupted");
}

/// Without `precreatePerSet` and `filesPerProc`, md-workbench is sized
/// as the app sizes it: mdtest-easy-write's rate x min(stonewall, 60) s
/// / tasks / 10 sets; here mdtest-easy does not run, so from the app's
/// 10 kIOPS, which the run's notes say.
#[test]
fn mdworkbench_is_sized_as_the_app_without_the_keys() {
    let s = Scratch::new("io500-mdwb-size");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(&s, "[mdtest-easy]\nrun = FALSE\n[ior-hard]\nrun = FALSE\n");
    let text = std::fs::read_to_string(&ini)
        .unwrap()
        .replace("[mdtest-easy]\nn = 2000\n", "");
    std::fs::write(&ini, text).unwrap();
    let o = iolab(&[
        "io500",
        "--tasks",
        "2",
        "--mode=extended",
        ini.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("sized from 10 kIOPS"), "{}", stderr(&o));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("results/result.json")).unwrap())
            .unwrap();
    // 10,000 ops/s x 1 s / 2 tasks / 10 sets.
    check_mdworkbench(&doc, 2, (500, 500));
    assert!(tree(&s.path("data")).is_empty());
}

/// An object gone before mdworkbench-bench (removed while the run is
/// held by `pause-dir`): the phase fails naming it, the later phases are
/// skipped, everything made is removed and the run exits 1.
#[test]
fn a_missing_object_fails_mdworkbench_bench() {
    use std::time::{Duration, Instant};
    let s = Scratch::new("io500-mdwb-fail");
    std::fs::create_dir(s.path("data")).unwrap();
    let hold = s.path("pause/mdworkbench-bench");
    touch(&hold);
    let ini = small_ini(&s, MDWB);
    let text = std::fs::read_to_string(&ini).unwrap().replace(
        "[debug]\n",
        &format!("[debug]\npause-dir = {}\n", s.path("pause").display()),
    );
    std::fs::write(&ini, text).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["io500", "--tasks", "2", "--mode=extended"])
        .arg(&ini)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Set 0 of task 1 is read by task 0 from its oldest object on.
    let victim = s.path("data/mdworkbench/1_0/file-0");
    // It exists from mdworkbench-create on; the bench cannot start before
    // the hold goes, which is after the victim is gone.
    let t0 = Instant::now();
    while !victim.exists() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_file(&victim).unwrap();
    std::fs::remove_file(&hold).unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("mdworkbench-bench failed") && stderr(&o).contains("1_0/file-0"),
        "{}",
        stderr(&o)
    );
    assert!(
        tree(&s.path("data")).is_empty(),
        "{:?}",
        tree(&s.path("data"))
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("results/result.json")).unwrap())
            .unwrap();
    assert!(phase(&doc, "mdworkbench-bench")["detail"]["failed"].is_string());
    assert!(phase(&doc, "mdworkbench-delete")["detail"]["skipped"].is_string());
    assert_eq!(doc["payload"]["valid_extended"], false);
}

/// Ctrl-C during mdworkbench-create (a million objects asked for): the
/// run stops, removes md-workbench's sets and everything else, and
/// exits 130.
#[test]
fn interrupted_mdworkbench_cleans_up() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let s = Scratch::new("io500-mdwb-int");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(
        &s,
        "[mdworkbench]\nprecreatePerSet = 100000\nfilesPerProc = 1\n",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["io500", "--tasks", "1", "--mode=extended"])
        .arg(&ini)
        .env("CI", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // mdworkbench-create starts once mdtest-easy-write's line is out.
    let line = lines
        .by_ref()
        .map(|l| l.unwrap())
        .find(|l| l.contains(" mdtest-easy-write "))
        .unwrap();
    assert!(line.starts_with("[RESULT]"), "{line}");
    // Until md-workbench's directory holds a set: the phase is running.
    let set = s.path("data/mdworkbench/0_0");
    let t0 = std::time::Instant::now();
    while !set.is_dir() && t0.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(
        tree(&s.path("data")).is_empty(),
        "left: {:?}",
        tree(&s.path("data")).len()
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("results/result.json")).unwrap())
            .unwrap();
    // Interrupted, not failed.
    let create = &phase(&doc, "mdworkbench-create")["detail"];
    assert_eq!(create, "interrupted", "{create}");
}

/// Peak RSS (KiB) of one `iolab io500` run, from wait4's rusage.
// wait4 reaps the child itself (std's wait cannot return its rusage).
#[allow(clippy::zombie_processes)]
fn peak_rss_kib(ini: &Path) -> i64 {
    use std::process::{Command, Stdio};
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["io500", "--tasks", "2"])
        .arg(ini)
        .env("CI", "1")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for the child we spawned (the Child is not waited again).
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as i32);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "status {status}"
    );
    ru.ru_maxrss
}

/// 300 times more files, the same memory: no per-file state is kept.
#[test]
fn memory_is_flat_in_the_number_of_files() {
    let s = Scratch::new("io500-mem");
    let mut peaks = Vec::new();
    for n in [100, 30000] {
        let ini = small_ini(&s, "");
        // No stonewall: every task makes all n files of both mdtest phases.
        let text = std::fs::read_to_string(&ini)
            .unwrap()
            .replace("stonewall-time = 1", "stonewall-time = 0")
            .replace("n = 2000", &format!("n = {n}"))
            .replace("n = 1000", &format!("n = {n}"));
        std::fs::write(&ini, text).unwrap();
        peaks.push(peak_rss_kib(&ini));
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(s.path("results/result.json")).unwrap())
                .unwrap();
        assert_eq!(
            phase(&doc, "mdtest-hard-delete")["detail"]["mdtest"]["items"],
            2 * n
        );
        assert!(tree(&s.path("data")).is_empty());
    }
    // 120,000 more files: even 32 bytes kept per file would add 3.7 MiB.
    assert!(peaks[1] < peaks[0] + 3 * 1024, "peak RSS {peaks:?} KiB");
}

/// The countable figures of a run (no times): bytes, transfers, items, found.
#[cfg(feature = "mpi")]
fn counts(doc: &Value) -> Vec<String> {
    PHASES
        .iter()
        .map(|p| {
            let d = &phase(doc, p)["detail"];
            let pick = |v: &Value, keys: &[&str]| -> String {
                keys.iter().map(|k| format!("{k}={} ", v[k])).collect()
            };
            match (d.get("ior"), d.get("mdtest"), d.get("find")) {
                (Some(i), _, _) => pick(i, &["bytes", "file_bytes", "transfers_per_task"]),
                (_, Some(m), _) => pick(m, &["items", "items_per_task"]),
                (_, _, Some(f)) => pick(f, &["found", "total"]),
                _ => format!("{d}"),
            }
        })
        .collect()
}

/// 2 ranks x 2 threads do what 4 threads do (no stonewall, so every
/// count is fixed by the ini).
#[cfg(feature = "mpi")]
#[test]
fn ranks_times_threads_give_the_same_figures_as_threads() {
    use std::process::Command;
    if Command::new("mpirun").arg("--version").output().is_err() {
        return common::skip_or_fail("io500_ranks_x_threads", "mpirun not installed");
    }
    let s = Scratch::new("io500-rxt");
    let ini = small_ini(&s, "");
    let text = std::fs::read_to_string(&ini)
        .unwrap()
        .replace("stonewall-time = 1", "stonewall-time = 0")
        .replace("n = 2000", "n = 300")
        .replace("n = 1000", "n = 200");
    std::fs::write(&ini, text).unwrap();
    let read = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(s.path("results/result.json")).unwrap())
            .unwrap()
    };
    let mut c = Command::new("mpirun");
    let _session = common::OmpiSession::attach(&mut c);
    let o = c
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            "2",
            env!("CARGO_BIN_EXE_iolab"),
            "io500",
            "--tasks",
            "2",
        ])
        .arg(&ini)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let mpi = read();
    assert_eq!(
        (
            mpi["payload"]["comm"]["ranks"].as_u64(),
            mpi["payload"]["comm"]["tasks"].as_u64()
        ),
        (Some(2), Some(4))
    );
    let o = iolab(&["io500", "--tasks", "4", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let threads = read();
    assert_eq!(counts(&mpi), counts(&threads));
    check_figures(&mpi, 4);
}

/// `api = S3`, complete: all 12 phases run on iolab's S3 backend
/// (SeaweedFS on loopback), ior-hard's shared file as one object per
/// transfer and find through LIST. The run pauses before find
/// (`[debug] pause-dir`), when the test LISTs what the phases made: find
/// must count those entries and find the files its criteria name
/// (`*01*`, 3901 bytes, newer than the timestamp object); afterwards
/// nothing is left under the datadir and nothing outside it is touched.
/// Without a stonewall (`stonewall-time = 0`) every phase does all its
/// work, so that mdtest-hard makes files whose names match (`*.101`...).
#[test]
fn s3_api_runs_all_twelve_phases() {
    let s = match iolab_testkit::s3::S3Server::shared() {
        Ok(s) => s,
        Err(e) => return common::skip_or_fail("io500_s3", &e),
    };
    let scratch = Scratch::new("io500-s3");
    let b = "io500-s3";
    s.make_bucket(b).unwrap();
    s.put(b, "outside/keep", b"x").unwrap();
    let before = s.keys(b).unwrap();
    let pause = scratch.path("pause");
    std::fs::create_dir(&pause).unwrap();
    std::fs::write(pause.join("find"), b"").unwrap();
    let ini = scratch.path("s3.ini");
    let text = format!(
        "[global]\ndatadir = /run1\nresultdir = {}\ntimestamp-datadir = FALSE\ntimestamp-resultdir = FALSE\napi = S3\n\
         [debug]\nstonewall-time = 0\npause-dir = {}\n[ior-easy]\ntransferSize = 1m\nblockSize = 3m\n\
         [ior-hard]\nsegmentCount = 20\n[mdtest-easy]\nn = 60\n[mdtest-hard]\nn = 120\n",
        scratch.path("results").display(),
        pause.display()
    );
    std::fs::write(&ini, text).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .envs(s.env())
        .env("CI", "1")
        .args(["io500", "--tasks", "2", &format!("--s3.bucket={b}")])
        .arg(&ini)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if line.starts_with("[RESULT]") && line.contains(" mdtest-hard-write ") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    // Paused before find: what the phases made is all there.
    let paused = rx.recv_timeout(std::time::Duration::from_secs(300));
    let objects = s.objects(b, "run1/").unwrap();
    std::fs::remove_file(pause.join("find")).unwrap();
    let status = wait_bounded(&mut child, 300);
    let stdout_text = reader.join().unwrap();
    assert!(paused.is_ok(), "no mdtest-hard-write result: {stdout_text}");
    assert!(status.success(), "{stdout_text}");
    let res = result_lines(&stdout_text);
    assert_eq!(res.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), PHASES);
    assert!(res.iter().all(|r| r.1 > 0.0), "{res:?}");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(scratch.path("results/result.json")).unwrap(),
    )
    .unwrap();
    let (want_total, want_found) = find_counts(&objects);
    let find = &phase(&doc, "find")["detail"]["find"];
    assert_eq!(find["total"].as_u64(), Some(want_total), "{find}");
    assert_eq!(find["found"].as_u64(), Some(want_found), "{find}");
    assert!(want_found > 0, "{find} {want_found}");
    // ior-hard: one object per transfer, named by file and offset.
    let hard = &phase(&doc, "ior-hard-write")["detail"]["ior"];
    let chunks = objects
        .iter()
        .filter(|(k, size, _)| k.starts_with("run1/ior-hard/file-") && *size == 47008)
        .count() as u64;
    assert_eq!(Some(chunks * 47008), hard["bytes"].as_u64(), "{hard}");
    assert_eq!(hard["file_bytes"], hard["bytes"]);
    assert_eq!(
        phase(&doc, "ior-hard-read")["detail"]["ior"]["bytes"],
        hard["bytes"]
    );
    assert_eq!(phase(&doc, "ior-hard-read")["detail"]["ior"]["errors"], 0);
    // Invalid only for the app's reasons: the short stonewall and the pause.
    let why: Vec<String> = doc["payload"]["invalid_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert!(
        why.iter()
            .all(|w| w.contains("stonewall") || w.contains("pause-dir") || w.contains("must last")),
        "{why:?}"
    );
    assert!(
        s.objects(b, "run1/").unwrap().is_empty(),
        "left under the datadir"
    );
    assert_eq!(s.keys(b).unwrap(), before, "the run left or removed keys");
}

/// Waits for `child` at most `secs` seconds; kills it past that.
fn wait_bounded(child: &mut std::process::Child, secs: u64) -> std::process::ExitStatus {
    for _ in 0..secs * 10 {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("the run did not end within {secs} s");
}

/// What find should count in a flat listing of the datadir: every entry
/// under the phase directories (objects and the directories their keys
/// name), and the files `*01*` of 3901 bytes newer than the timestamp.
fn find_counts(objects: &[(String, u64, u64)]) -> (u64, u64) {
    let stamp = objects
        .iter()
        .find(|(k, _, _)| k == "run1/timestampfile")
        .map(|o| o.2)
        .expect("the timestamp object");
    let mut dirs = std::collections::BTreeSet::new();
    let (mut files, mut found) = (0, 0);
    for (k, size, t) in objects {
        let Some(rest) = ["ior-easy/", "ior-hard/", "mdtest-easy/", "mdtest-hard/"]
            .iter()
            .find_map(|r| {
                k.strip_prefix("run1/")
                    .and_then(|x| x.strip_prefix(r))
                    .map(|x| (*r, x))
            })
        else {
            continue;
        };
        let parts: Vec<&str> = rest.1.split('/').collect();
        for i in 1..parts.len() {
            dirs.insert(format!("{}{}", rest.0, parts[..i].join("/")));
        }
        let name = parts[parts.len() - 1];
        if !name.is_empty() {
            files += 1;
            found += u64::from(name.contains("01") && *size == 3901 && *t > stamp);
        }
    }
    (files + dirs.len() as u64, found)
}

/// `api = S3` in extended mode: md-workbench's sets, objects, reads
/// and deletes go through the S3 backend (its sets are key prefixes);
/// every object made is removed and no key outside the run's prefix is
/// touched.
#[test]
fn s3_api_runs_md_workbench() {
    let s = match iolab_testkit::s3::S3Server::shared() {
        Ok(s) => s,
        Err(e) => return common::skip_or_fail("io500_s3_mdwb", &e),
    };
    let scratch = Scratch::new("io500-s3-mdwb");
    let b = "io500-s3-mdwb";
    s.make_bucket(b).unwrap();
    s.put(b, "outside/keep", b"x").unwrap();
    let before = s.keys(b).unwrap();
    let ini = scratch.path("s3.ini");
    let text = format!(
        "[global]\ndatadir = /run2\nresultdir = {}\ntimestamp-datadir = FALSE\ntimestamp-resultdir = FALSE\napi = S3\n\
         [debug]\nstonewall-time = 1\n[ior-easy]\ntransferSize = 1m\nblockSize = 2m\n[ior-hard]\nsegmentCount = 4\n\
         [mdtest-easy]\nn = 50\n[mdtest-hard]\nn = 50\n\
         [mdworkbench]\nprecreatePerSet = 12\nfilesPerProc = 6\n",
        scratch.path("results").display()
    );
    std::fs::write(&ini, text).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .envs(s.env())
        .env("CI", "1")
        .args([
            "io500",
            "--tasks",
            "2",
            "--mode=extended",
            &format!("--s3.bucket={b}"),
        ])
        .arg(&ini)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(scratch.path("results/result.json")).unwrap(),
    )
    .unwrap();
    check_mdworkbench(&doc, 2, (12, 6));
    assert_eq!(s.keys(b).unwrap(), before, "the run left or removed keys");
}

/// Every file under `dir` with its bytes, following no link.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(files_under(&e.path()));
        } else {
            out.push((e.path(), std::fs::read(e.path()).unwrap_or_default()));
        }
    }
    out.sort();
    out
}

/// Links planted under the datadir, where the phases make directories,
/// lead to a directory of io500-looking names: `--cleanup` names each
/// link and leaves it, removes what is really the run's, and touches
/// nothing the links lead to; a normal run refuses the datadir (exit 2,
/// nothing created).
#[test]
fn cleanup_and_runs_follow_no_link_below_the_datadir() {
    let s = Scratch::new("io500-links");
    let ini = small_ini(&s, "");
    let (d, other) = (s.path("data"), s.path("other"));
    for f in [
        "ior_file_easy.00000000",
        "file",
        "test-dir.0-0/mdtest_tree.0/file.mdtest.0.1",
        "mdtest_tree.0/file.mdtest.0.2",
        "file.mdtest.0.3",
        "0_0/file-1",
        "file-2",
    ] {
        touch(&other.join(f));
    }
    let before = files_under(&other);
    let links = [
        "ior-easy",
        "ior-hard",
        "mdworkbench",
        "mdtest-easy/test-dir.0-0",
        "mdtest-hard/test-dir.0-0/mdtest_tree.0",
        "mdtest-hard/test-dir.0-1/mdtest_tree.0/mdtest_tree.1",
    ];
    for l in links {
        let at = d.join(l);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&other, &at).unwrap();
    }
    // What is the run's beside them goes.
    touch(&d.join("mdtest-hard/test-dir.0-1/mdtest_tree.0/file.mdtest.1.7"));
    let o = iolab(&["io500", ini.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ior-easy is a symbolic link or a file"),
        "{}",
        stderr(&o)
    );
    assert!(!s.path("results").exists());
    let o = iolab(&["io500", "--cleanup", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(files_under(&other), before, "the links were followed");
    for l in links {
        assert!(d.join(l).is_symlink(), "{l}");
        let line = format!("left: {} (a symbolic link", d.join(l).display());
        assert!(stderr(&o).contains(&line), "{l}: {}", stderr(&o));
    }
    assert!(!d
        .join("mdtest-hard/test-dir.0-1/mdtest_tree.0/file.mdtest.1.7")
        .exists());
}

/// Parents of the datadir that did not exist are made for the run and
/// removed after it; a datadir with a name longer than a file system
/// takes is refused (exit 2) before anything (resultdir, parents) is made.
#[test]
fn the_datadir_s_parents_go_and_a_long_one_makes_nothing() {
    let s = Scratch::new("io500-parents");
    let ini = small_ini(
        &s,
        "[mdtest-easy]\nrun = FALSE\n[mdtest-hard]\nrun = FALSE\n",
    );
    let text = std::fs::read_to_string(&ini).unwrap();
    let deep = text.replace(
        &format!("datadir = {}", s.path("data").display()),
        &format!("datadir = {}", s.path("p1/p2/data").display()),
    );
    std::fs::write(&ini, &deep).unwrap();
    let o = iolab(&["io500", "--tasks", "2", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!s.path("p1").exists(), "the parents the run made stay");
    assert!(s.path("results/result.txt").exists());
    std::fs::remove_dir_all(s.path("results")).unwrap();
    let long = text.replace(
        &format!("datadir = {}", s.path("data").display()),
        &format!("datadir = {}/{}", s.path("p1").display(), "a".repeat(300)),
    );
    std::fs::write(&ini, &long).unwrap();
    let o = iolab(&["io500", "--tasks", "2", ini.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("NAME_MAX"), "{}", stderr(&o));
    assert!(!s.path("results").exists() && !s.path("p1").exists());
}

/// An ini as the io500 app reads it: a UTF-8 byte-order mark (a
/// Windows editor's), comments after values, names in another case.
#[test]
fn an_ini_with_a_bom_and_comments_after_values_is_read_as_the_app_reads_it() {
    let s = Scratch::new("io500-ini");
    let ini = small_ini(&s, "");
    let text = std::fs::read_to_string(&ini)
        .unwrap()
        .replace("\ndatadir = ", "\nDATADIR = ")
        .replace("\nresultdir", "\nresultdir\t")
        .replacen("[global]", "[Global] # the run", 1);
    let text = text.replacen(
        &format!("{}\n", s.path("data").display()),
        &format!("{} ; where the files go\n", s.path("data").display()),
        1,
    );
    std::fs::write(&ini, format!("\u{feff}{text}")).unwrap();
    let o = iolab(&["io500", "--dry-run", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("{}/ior-easy", s.path("data").display())),
        "{out}"
    );
    assert!(!out.contains("where the files go"), "{out}");
}

/// Ctrl-C with many files made: the run says what its cleanup removes
/// and how many entries; a second Ctrl-C stops it at once (exit 130),
/// naming the datadir and the command that removes the rest, which
/// then removes it.
#[test]
fn a_second_ctrl_c_stops_the_cleanup_and_names_what_is_left() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let s = Scratch::new("io500-int2");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(&s, "");
    let text = std::fs::read_to_string(&ini)
        .unwrap()
        .replace("stonewall-time = 1", "stonewall-time = 600")
        .replace("n = 2000", "n = 10000000");
    std::fs::write(&ini, text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["io500", "--tasks", "2"])
        .arg(&ini)
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let easy = s.path("data/mdtest-easy");
    // Enough files that removing them outlasts the second signal.
    let t0 = Instant::now();
    let count = |p: &Path| std::fs::read_dir(p).map(|r| r.count()).unwrap_or(0);
    let trees = |p: &Path| -> usize {
        let Ok(rd) = std::fs::read_dir(p.join("test-dir.0-0")) else {
            return 0;
        };
        rd.flatten().map(|e| count(&e.path())).sum()
    };
    while trees(&easy) < 100_000 {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "too few files made"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let t0 = Instant::now();
    loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "ended first: {said}");
        said.push_str(&line);
        if line.contains("interrupted; removing what the phases left") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "{said}");
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "not stopped: {said}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    said.push_str(&rest);
    assert_eq!(child.wait().unwrap().code(), Some(130), "{said}");
    assert!(
        said.contains("entries (a second Ctrl-C stops at once"),
        "{said}"
    );
    assert!(
        said.contains("stopped at once by a second signal"),
        "{said}"
    );
    let fix = format!("iolab io500 --cleanup {}", ini.display());
    assert!(said.contains(&fix), "{said}");
    assert!(
        !tree(&s.path("data")).is_empty(),
        "the cleanup was not cut short"
    );
    let o = iolab(&["io500", "--cleanup", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        tree(&s.path("data")).is_empty(),
        "{:?}",
        tree(&s.path("data"))
    );
    // --cleanup says how much it found and that it removed it all.
    let err = stderr(&o);
    let n: String = err
        .split(" entries (Ctrl-C stops")
        .next()
        .and_then(|h| h.rsplit(": ").next())
        .unwrap_or_default()
        .to_string();
    assert!(n.parse::<u64>().is_ok_and(|n| n > 0), "{err}");
    assert!(
        err.contains(&format!("removed {n} of {n} entries")),
        "{err}"
    );
}

/// `ln -s` of a path to what a refused run must leave as it was.
fn link_to(target: &Path, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// A run of `ini` refused with exit 2 whose message names `needle`.
fn refused_naming(ini: &Path, extra: &[&str], needle: &str) {
    let mut args = vec!["io500", "--tasks", "2"];
    args.extend_from_slice(extra);
    args.push(ini.to_str().unwrap());
    let o = iolab(&args);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains(needle), "{needle}: {}", stderr(&o));
    assert!(
        !stdout(&o).contains("[RESULT]"),
        "a phase ran: {}",
        stdout(&o)
    );
}

/// A link to nothing where the datadir's `timestampfile` goes: the run
/// is refused before anything is made (it was found only once the
/// phases ran, and the run's cleanup then removed the link), and the
/// link stays, through `--cleanup` too (it is not a run's).
#[test]
fn a_link_named_timestampfile_is_refused_and_kept() {
    let s = Scratch::new("io500-private-stamp");
    let ini = small_ini(&s, "");
    let d = s.path("data");
    link_to(&s.path("elsewhere"), &d.join("timestampfile"));
    refused_naming(&ini, &[], "timestampfile exists");
    assert_eq!(tree(&d), ["timestampfile"], "the datadir was changed");
    assert!(!s.path("results").exists(), "the resultdir was made");
    let o = iolab(&["io500", "--cleanup", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(d.join("timestampfile").is_symlink(), "{}", stderr(&o));
    assert!(stderr(&o).contains("timestampfile (not made by this run)"));
}

/// A user's file, or a link to nothing, named as one of mdtest's
/// stonewall files in the resultdir: the run is refused naming it,
/// before anything is made (it wrote over the file and removed it), and
/// `--cleanup` leaves it (it is not mdtest's count).
#[test]
fn a_resultdir_file_named_as_a_stonewall_file_is_refused_and_kept() {
    let s = Scratch::new("io500-private-wall");
    let ini = small_ini(&s, "");
    let r = s.path("results");
    std::fs::create_dir(&r).unwrap();
    std::fs::write(r.join("mdtest-easy.stonewall"), b"my notes\n").unwrap();
    refused_naming(&ini, &[], "mdtest-easy.stonewall exists");
    assert!(!s.path("data").exists(), "the datadir was made");
    std::fs::remove_file(r.join("mdtest-easy.stonewall")).unwrap();
    link_to(&s.path("nothere"), &r.join("mdtest-hard.stonewall"));
    refused_naming(&ini, &[], "mdtest-hard.stonewall exists");
    assert!(r.join("mdtest-hard.stonewall").is_symlink());
    std::fs::write(r.join("mdtest-easy.stonewall"), b"my notes\n").unwrap();
    let o = iolab(&["io500", "--cleanup", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        r.join("mdtest-hard.stonewall").is_symlink(),
        "{}",
        stderr(&o)
    );
    let notes = std::fs::read(r.join("mdtest-easy.stonewall")).unwrap();
    assert_eq!(notes, b"my notes\n", "{}", stderr(&o));
    assert!(stderr(&o).contains("mdtest-easy.stonewall (not made by this run)"));
}

/// A resultdir inside what the run removes at its end (a phase directory
/// of the datadir, named directly or through `..` and a link) is exit 2
/// before anything is made, not a run whose results cannot be written.
#[test]
fn a_resultdir_the_run_would_remove_is_refused() {
    let s = Scratch::new("io500-resultdir-inside");
    let ini = small_ini(&s, "");
    let text = std::fs::read_to_string(&ini).unwrap();
    let results = format!("resultdir = {}", s.path("results").display());
    let refused_at = |inside: &str, removed: &str| {
        let at = format!("resultdir = {}", s.path(inside).display());
        std::fs::write(&ini, text.replace(&results, &at)).unwrap();
        let needle = format!("the run removes {} at its end", s.path(removed).display());
        refused_naming(&ini, &[], &needle);
    };
    for (inside, removed) in [
        ("data/ior-easy", "data/ior-easy"),
        ("data/mdtest-easy/r", "data/mdtest-easy"),
        ("data/ior-hard/../mdtest-hard", "data/mdtest-hard"),
    ] {
        refused_at(inside, removed);
        assert!(!s.path("data").exists(), "{inside}: the datadir was made");
    }
    std::fs::create_dir(s.path("data")).unwrap();
    link_to(&s.path("data"), &s.path("via"));
    refused_at("via/ior-hard", "data/ior-hard");
    assert!(tree(&s.path("data")).is_empty(), "the datadir was changed");
}

/// A datadir that is a link to nothing is exit 2 with nothing made:
/// no resultdir, no store.
#[test]
fn a_dangling_datadir_link_makes_nothing() {
    let s = Scratch::new("io500-dangling");
    let ini = small_ini(&s, "");
    link_to(&s.path("nothere"), &s.path("data"));
    let store = s.path("s.db");
    let store_arg = ["--store", store.to_str().unwrap()];
    refused_naming(&ini, &store_arg, "a symbolic link to nothing");
    assert!(!s.path("results").exists(), "the resultdir was made");
    assert!(!store.exists(), "the store was made");
    assert!(!s.path("nothere").exists(), "made through the link");
}

/// The results come before the final cleanup: a run killed (-9) while
/// the cleanup removes what its phases left keeps every result file,
/// whole; a Ctrl-C there stops the cleanup at its next entry, names
/// what it left (exit 130) with the results written, and `--cleanup`
/// removes the rest.
#[test]
fn the_results_are_whole_before_the_final_cleanup_starts() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    for sig in [libc::SIGKILL, libc::SIGINT] {
        let s = Scratch::new(&format!("io500-order-{sig}"));
        std::fs::create_dir(s.path("data")).unwrap();
        let ini = small_ini(&s, "[mdtest-easy-delete]\nrun = FALSE\n");
        let text = std::fs::read_to_string(&ini)
            .unwrap()
            .replace("stonewall-time = 1", "stonewall-time = 3")
            .replace("n = 2000", "n = 10000000");
        std::fs::write(&ini, text).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["io500", "--tasks", "2"])
            .arg(&ini)
            .env("CI", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        loop {
            let mut line = String::new();
            let n = err.read_line(&mut line).unwrap();
            assert!(n > 0, "ended before its cleanup: {said}");
            said.push_str(&line);
            if line.contains("removing what the phases left") {
                break;
            }
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_bounded(&mut child, 120);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
        said.push_str(&rest);
        let results = s.path("results");
        let json: Value =
            serde_json::from_slice(&std::fs::read(results.join("result.json")).unwrap()).unwrap();
        assert_eq!(json["payload"]["phases"].as_array().unwrap().len(), 12);
        let txt = std::fs::read_to_string(results.join("result.txt")).unwrap();
        assert!(txt.contains("[SCORE]"), "{txt}");
        let summary = std::fs::read_to_string(results.join("result_summary.txt")).unwrap();
        assert!(summary.contains("[SCORE ]"), "{summary}");
        let orig = std::fs::read_to_string(results.join("config-orig.ini")).unwrap();
        assert_eq!(orig, std::fs::read_to_string(&ini).unwrap());
        let values = std::fs::read_to_string(results.join("config.ini")).unwrap();
        assert!(values.contains("stonewall-time = 3\n"), "{values}");
        assert!(values.contains("scc = FALSE\n"), "every key: {values}");
        assert!(
            !tree(&s.path("data")).is_empty(),
            "the cleanup was not cut short"
        );
        if sig == libc::SIGINT {
            assert_eq!(status.code(), Some(130), "{said}");
            assert!(
                said.contains("entries (Ctrl-C stops; iolab io500 --cleanup"),
                "{said}"
            );
            assert!(
                said.contains("left: ") && said.contains("the removal was stopped"),
                "{said}"
            );
        }
        let o = iolab(&["io500", "--cleanup", ini.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            tree(&s.path("data")).is_empty(),
            "{:?}",
            tree(&s.path("data"))
        );
    }
}

/// A phase that did not run is left out of its group's mean, as the
/// app's calc_score leaves out every score of 0: the bandwidth is the
/// mean of the 3 ior phases that ran, and the run is [INVALID].
#[test]
fn a_phase_that_did_not_run_is_left_out_of_its_group_s_mean() {
    let s = Scratch::new("io500-skip");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(&s, "[ior-easy-read]\nrun = FALSE\n");
    let o = iolab(&["io500", "--tasks", "2", ini.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let res = result_lines(&out);
    let bw: Vec<f64> = res
        .iter()
        .filter(|r| r.0.starts_with("ior") && r.1 > 0.0)
        .map(|r| r.1)
        .collect();
    assert_eq!(bw.len(), 3, "{out}");
    let line = out.lines().find(|l| l.starts_with("[SCORE ]")).unwrap();
    let x: f64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert!(close(x, geo(&bw)), "{x} vs {}: {out}", geo(&bw));
    assert!(x > 0.0 && line.ends_with(" [INVALID]"), "{line}");
}

/// A timestamped datadir or resultdir already there is another run's
/// (two runs started in the same second): refused (exit 2) before
/// anything is made. `--timestamp NAME` names both; a name with `/` is
/// refused.
#[test]
fn a_taken_timestamp_is_refused_before_anything() {
    let s = Scratch::new("io500-stamp");
    let ini = small_ini(&s, "");
    let text = std::fs::read_to_string(&ini)
        .unwrap()
        .replace("timestamp-datadir = FALSE", "timestamp-datadir = TRUE")
        .replace("timestamp-resultdir = FALSE", "timestamp-resultdir = TRUE");
    std::fs::write(&ini, text).unwrap();
    let run = |stamp: &str| iolab(&["io500", "--timestamp", stamp, ini.to_str().unwrap()]);
    for (taken, other) in [("results", "data"), ("data", "results")] {
        let _ = std::fs::remove_dir_all(s.path("data"));
        let _ = std::fs::remove_dir_all(s.path("results"));
        std::fs::create_dir_all(s.path(taken).join("T1")).unwrap();
        std::fs::write(s.path(taken).join("T1/theirs"), b"x").unwrap();
        let o = run("T1");
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("already there, another run's"),
            "{}",
            stderr(&o)
        );
        assert!(!s.path(other).exists(), "{taken}: {other} was made");
        assert_eq!(
            std::fs::read(s.path(taken).join("T1/theirs")).unwrap(),
            b"x"
        );
    }
    for bad in ["a/b", "..", ""] {
        let o = run(bad);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("--timestamp"), "{}", stderr(&o));
    }
    let o = run("T2");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s.path("results/T2/result.txt").is_file());
    assert!(!s.path("data/T2").exists(), "the run's datadir goes");
}

/// The resultdir's files are one set: when one cannot be written (no
/// inode left for it) none is put in place, nothing temporary stays, and
/// the run says so (exit 1).
#[test]
fn the_result_files_are_a_whole_set_or_absent() {
    let s = Scratch::new("io500-set");
    std::fs::create_dir(s.path("data")).unwrap();
    // The root, mdtest's 2 stonewall files and 3 of the 5 files.
    let small = common::SmallFs::new(&s, "small", "nr_inodes=6");
    if !small.mounted {
        return;
    }
    let ini = small_ini(&s, "");
    let text = std::fs::read_to_string(&ini).unwrap().replace(
        &format!("resultdir = {}", s.path("results").display()),
        &format!("resultdir = {}", small.dir.display()),
    );
    std::fs::write(&ini, text).unwrap();
    let o = iolab(&["io500", ini.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no result file was written"),
        "{}",
        stderr(&o)
    );
    let left: Vec<_> = std::fs::read_dir(&small.dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(tree(&s.path("data")).is_empty(), "the cleanup still ran");
}

/// On a terminal the run says the least it takes and draws a bar of the
/// phases; in a pipe neither.
#[test]
fn a_terminal_sees_the_least_the_run_takes_and_a_bar_of_phases() {
    let s = Scratch::new("io500-tty");
    std::fs::create_dir(s.path("data")).unwrap();
    let ini = small_ini(&s, "");
    let line = format!("{} io500 {}", env!("CARGO_BIN_EXE_iolab"), ini.display());
    let tty = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("CI")
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{seen}");
    assert!(
        seen.contains("12 phases; the 4 write phases run for stonewall-time = 1 s each, so the run takes at least 4 s"),
        "{seen}"
    );
    assert!(seen.contains("mdtest-easy-write"), "{seen}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["io500", ini.to_str().unwrap()])
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("12 phases"), "{}", stderr(&o));
}
