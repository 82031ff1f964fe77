//! Every tool writes the same results envelope and `--store` records
//! each of them: mdtest, xdd, xddcp, `stats run`, lst and the four
//! surveys into one store on a tmpfs, then `iolab results list` shows
//! them all. Real binary, real loopback sockets (lst agents, a local
//! xddcp through a remote shell that runs the command here).

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::{iolab, stderr, stdout, Scratch};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// An lst agent on a free loopback port, killed on drop.
struct Agent(Child, String);

impl Agent {
    fn start() -> Agent {
        let port = common::e2e::free_ports(1);
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(IOLAB)
            .args(["lst", "agent", "--listen", &addr])
            .env_remove("IOLAB_KEY_FILE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Agent(child, addr)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ok(what: &str, o: &std::process::Output) {
    assert!(o.status.success(), "{what}: {}{}", stdout(o), stderr(o));
}

fn keys(p: &Path) -> (BTreeSet<String>, Value) {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let mut k: BTreeSet<String> = v.as_object().unwrap().keys().cloned().collect();
    // Optional members: present when the run has them.
    k.remove("stats");
    k.remove("figures");
    (k, v)
}

/// Equal JSON, numbers to 1e-12 relative (values read back from a
/// payload's JSON text can differ from the engine's in the last bit).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[test]
fn every_tool_writes_the_envelope_and_is_recorded_in_the_store() {
    let s = Scratch::new("store-all");
    let store = s.path("runs.sqlite");
    let st = store.to_str().unwrap();
    let dir = s.path("t");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();

    let md_json = s.path("md.json");
    let md = s.path("md");
    ok(
        "mdtest",
        &iolab(&[
            "mdtest",
            "-n",
            "10",
            "-d",
            md.to_str().unwrap(),
            "--json",
            md_json.to_str().unwrap(),
            "--store",
            st,
        ]),
    );
    let target = s.path("x.dat");
    let xdd_json = s.path("xdd.json");
    ok(
        "xdd",
        &iolab(&[
            "xdd",
            "-op",
            "write",
            "-target",
            target.to_str().unwrap(),
            "-reqsize",
            "4",
            "-numreqs",
            "8",
            "-passes",
            "3",
            "--json",
            xdd_json.to_str().unwrap(),
            "--store",
            st,
        ]),
    );

    // xddcp: one file to this host through a remote shell that drops the host.
    let rsh = s.path("fake-rsh");
    std::fs::write(&rsh, "#!/bin/sh\nshift\nexec \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    common::e2e::random_file(&s.path("src"), 1 << 20);
    let cp_json = s.path("cp.json");
    let port = common::e2e::free_ports(16).to_string();
    let dest = format!("127.0.0.1:{}", s.path("dst").display());
    let o = Command::new(IOLAB)
        .args(["xddcp", "-t", "2", "-p", &port, "--timeout", "30"])
        .args([
            "--rsh",
            &format!("exec:{}", rsh.display()),
            "--remote-iolab",
            IOLAB,
        ])
        .args(["--json", cp_json.to_str().unwrap(), "--store", st])
        .arg(s.path("src"))
        .arg(&dest)
        .current_dir(&s.root)
        .output()
        .unwrap();
    ok("xddcp", &o);

    let stats_json = s.path("stats.json");
    let tgz = s.path("prof.tgz");
    ok(
        "stats run",
        &iolab(&[
            "stats",
            "run",
            "local,1s",
            "--tarball",
            tgz.to_str().unwrap(),
            "--json",
            stats_json.to_str().unwrap(),
            "--store",
            st,
            "--",
            "sleep",
            "1",
        ]),
    );

    let (a, b) = (Agent::start(), Agent::start());
    let lst_json = s.path("lst.json");
    std::thread::sleep(std::time::Duration::from_millis(300));
    ok(
        "lst",
        &iolab(&[
            "lst",
            "run",
            "ping",
            "--from",
            &a.1,
            "--to",
            &b.1,
            "--count",
            "10",
            "--repeat",
            "2",
            "--json",
            lst_json.to_str().unwrap(),
            "--store",
            st,
        ]),
    );
    let r = s.path("r");
    let r = r.to_str().unwrap();
    let img = s.path("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    for words in [
        vec![
            "survey",
            "disk",
            img.to_str().unwrap(),
            "--size",
            "2",
            "--crghi",
            "1",
            "--thrhi",
            "1",
        ],
        vec![
            "survey",
            "obdfilter",
            d,
            "--size",
            "2",
            "--nobjhi",
            "2",
            "--thrhi",
            "2",
        ],
        vec![
            "survey",
            "mds",
            d,
            "--thrlo",
            "1",
            "--thrhi",
            "2",
            "--file-count",
            "20",
        ],
        vec!["survey", "ost", d, "-s", "1"],
    ] {
        let mut w = words.clone();
        let json = s.path(&format!("{}.json", words[1]));
        w.extend(["--rslt", r, "--store", st, "--json", json.to_str().unwrap()]);
        ok(words[1], &iolab(&w));
    }

    // The same envelope as mdtest's.
    let (want, _) = keys(&md_json);
    for (tool, p) in [("xddcp", &cp_json), ("stats run", &stats_json)] {
        let (got, v) = keys(p);
        assert_eq!(got, want, "{tool}: {v}");
        assert_eq!(v["tool"]["name"], tool, "{v}");
        assert_eq!(v["outcome"]["status"], "completed", "{v}");
    }
    let (_, cp) = keys(&cp_json);
    assert_eq!(cp["payload"]["bytes"], 1 << 20);
    assert_eq!(cp["payload"]["files_copied"], 1);

    // mdtest states its figures in the envelope, the same ones the
    // store's payload reader finds (so moving them changed no number).
    let (obd_json, mds_json) = (s.path("obdfilter.json"), s.path("mds.json"));
    for (tool, p) in [
        ("mdtest", &md_json),
        ("xdd", &xdd_json),
        ("lst", &lst_json),
        ("survey obdfilter", &obd_json),
        ("survey mds", &mds_json),
    ] {
        let (_, doc) = keys(p);
        let from_payload = iolab_store::figures::extract(tool, &doc["config"], &doc["payload"]);
        assert!(!from_payload.is_empty(), "{tool}");
        assert!(
            same(
                &serde_json::to_value(&from_payload).unwrap(),
                &doc["figures"]
            ),
            "{tool}: {from_payload:?} vs {}",
            doc["figures"]
        );
    }
    // xddcp states its headline figure in the envelope; the store has it.
    assert_eq!(cp["figures"][0]["phase"], "copy", "{cp}");
    let shown = stdout(&iolab(&["results", "--store", st, "show", "3"]));
    assert!(
        shown.contains("xddcp")
            && shown
                .lines()
                .any(|l| l.contains("copy") && l.contains("MB/s")),
        "{shown}"
    );
    // The disk and target surveys state bandwidth figures (the store's
    // payload reader found none for them).
    for id in ["6", "9"] {
        let shown = stdout(&iolab(&["results", "--store", st, "show", id]));
        assert!(
            shown
                .lines()
                .any(|l| l.contains("bandwidth") && l.contains("MB/s")),
            "{shown}"
        );
    }
    let listed = stdout(&iolab(&["results", "--store", st, "list"]));
    for tool in [
        "mdtest",
        "xdd",
        "xddcp",
        "stats run",
        "lst",
        "survey disk",
        "survey obdfilter",
        "survey mds",
        "survey ost",
    ] {
        assert!(
            listed.lines().any(|l| l.contains(tool)),
            "{tool} not listed:\n{listed}"
        );
    }
}
