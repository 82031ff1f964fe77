//! The command lines administrators bring from XDD, mdtest and the Lustre
//! I/O kit, typed as they type them (issue 18): each test runs the real
//! binary on the user's own form of the command.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::survey;

use common::{iolab, stderr, stdout, Scratch};
use std::path::Path;
use std::process::{Command, Output};

/// `iolab xdd` with `line` split on spaces, run in `dir`.
fn xdd_in(dir: &Path, line: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(line.split_whitespace())
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

fn usage_error(o: &Output, names: &str) {
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(o), stderr(o));
    assert!(stderr(o).contains(names), "{}", stderr(o));
}

/// Block locations of a `-seek save` file (XDD's layout: index, location).
fn saved_locations(file: &Path) -> Vec<u64> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect()
}

/// The COMBINED row of XDD's table, split into its columns.
fn combined(o: &Output) -> Vec<String> {
    stdout(o)
        .lines()
        .find(|l| l.starts_with("COMBINED"))
        .unwrap_or_else(|| panic!("no COMBINED row:\n{}", stdout(o)))
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn xdd_seek_stagger_spaces_requests_as_xdd_does() {
    let s = Scratch::new("forms-stagger");
    std::fs::File::create(s.path("f"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    // A stride larger than the request: stride - reqsize blocks between.
    ok(&xdd_in(
        &s.root,
        "-op read -target f -reqsize 8 -numreqs 4 -seek stagger 32 -seek save a",
    ));
    assert_eq!(saved_locations(&s.path("a.T0.txt")), [0, 32, 64, 96]);
    // No stride: XDD's gap (range - reqsize - n * reqsize) / (n - 1) = 20.
    ok(&xdd_in(
        &s.root,
        "-op read -target f -reqsize 8 -numreqs 4 -seek stagger -seek range 100 -seek save b",
    ));
    assert_eq!(saved_locations(&s.path("b.T0.txt")), [0, 28, 56, 84]);
    // A stride not larger than the request divides the range, as XDD.
    ok(&xdd_in(
        &s.root,
        "-op read -target f -reqsize 8 -numreqs 4 -seek stagger 8 -seek range 100 -seek save c",
    ));
    assert_eq!(saved_locations(&s.path("c.T0.txt")), [0, 28, 56, 84]);
}

#[test]
fn xdd_reading_a_target_that_does_not_exist_is_refused_before_anything() {
    let s = Scratch::new("forms-rwratio");
    let o = xdd_in(
        &s.root,
        "-op write -target new -reqsize 8 -numreqs 4 -rwratio 50 -output out.txt -csvout out.csv",
    );
    usage_error(&o, "-rwratio");
    assert!(stderr(&o).contains("new"), "{}", stderr(&o));
    assert!(
        common::tree(&s.root).is_empty(),
        "{:?}",
        common::tree(&s.root)
    );
    // All writes need nothing to exist.
    ok(&xdd_in(
        &s.root,
        "-op write -target new -reqsize 8 -numreqs 4 -rwratio 0",
    ));
    // Once it exists, the mixed run reads what is there.
    ok(&xdd_in(
        &s.root,
        "-op write -target new -reqsize 8 -numreqs 4 -rwratio 50",
    ));
}

#[test]
fn xdd_an_empty_target_name_is_a_usage_error() {
    let s = Scratch::new("forms-empty-target");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["xdd", "-op", "write", "-target", "", "-numreqs", "4"])
        .current_dir(&s.root)
        .output()
        .unwrap();
    usage_error(&o, "-target");
    assert!(common::tree(&s.root).is_empty());
}

#[test]
fn xdd_csvout_opens_with_the_preamble() {
    let s = Scratch::new("forms-csvout");
    ok(&xdd_in(
        &s.root,
        "-op write -target f -reqsize 4 -numreqs 8 -csvout test-run.csv -output test-run.txt",
    ));
    let csv = std::fs::read_to_string(s.path("test-run.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("IOIOIOIOIOIOIOIOIOI "), "{csv}");
    let header = lines
        .iter()
        .position(|l| l.starts_with("What,Pass,"))
        .unwrap();
    for expected in [
        "Output file name, test-run.txt",
        "CSV output file name, test-run.csv",
        "Number of Targets, 1",
    ] {
        assert!(lines[..header].contains(&expected), "{expected}: {csv}");
    }
    assert!(lines[..header]
        .iter()
        .any(|l| l.trim().starts_with("Target[0] Q[0], f")));
    assert!(
        lines[header + 2].starts_with("COMBINED,1,1,1,32768,8,"),
        "{csv}"
    );
}

#[test]
fn xdd_throttle_reports_the_rate_it_held_and_the_ops_it_was_given() {
    let s = Scratch::new("forms-throttle");
    // 4 requests of 1 MiB at 4 MB/s span four whole intervals.
    let o = xdd_in(
        &s.root,
        "-op write -target f -reqsize 1024 -numreqs 4 -throttle bw 4",
    );
    ok(&o);
    let row = combined(&o);
    assert_eq!((row[4].as_str(), row[5].as_str()), ("4194304", "4"));
    held(&row, 7, 4194304.0 / 1e6, 4.0, &o);
    // 50 ops/s for one second: 50 operations, the one due at 1 s is not
    // issued.
    let o = xdd_in(
        &s.root,
        "-op write -target g -reqsize 1 -throttle ops 50 -timelimit 1",
    );
    ok(&o);
    let row = combined(&o);
    assert_eq!(row[5], "50", "{}", stdout(&o));
    held(&row, 8, 50.0, 50.0, &o);
}

/// Column `col` of a COMBINED row is a rate that held its throttle:
/// `amount` over the pass's elapsed seconds (column 6, whose three
/// decimals bound the check), and never above `limit`. A pass spans its
/// whole schedule, so a machine without load reports the limit itself;
/// the end-of-pass sync after the schedule's end may add a little, which
/// is why the rate is not compared with the limit to the last digit.
fn held(row: &[String], col: usize, amount: f64, limit: f64, o: &Output) {
    let rate: f64 = row[col].parse().unwrap();
    let secs: f64 = row[6].parse().unwrap();
    let want = amount / secs;
    assert!(
        (rate - want).abs() <= want * 0.0006 / secs + 0.001 && rate <= limit + 0.0005,
        "rate {rate} over {secs} s, want {want} and at most {limit}: {}",
        stdout(o)
    );
}

#[test]
fn mdtest_refuses_what_mdtest_refuses_before_anything() {
    let s = Scratch::new("forms-mdtest-refuse");
    let (a, b) = (s.path("a"), s.path("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let two = format!("{}@{}", a.display(), b.display());
    // -N with more than one -d path (this failed mid-run with exit 1).
    let o = common::mdtest(&format!("-u -N 3 -n 5 --tasks 4 -d {two}"));
    usage_error(&o, "-N with several -d paths");
    // -k with -w.
    let o = common::mdtest(&format!("-k -w 10 -n 5 -d {}", a.display()));
    usage_error(&o, "-k with -w");
    assert_eq!(common::tree(&s.root), ["a/", "b/"]);
}

#[test]
fn mdtest_k_leaves_files_mode_0400_and_help_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("forms-mdtest-k");
    let d = s.path("d");
    ok(&common::mdtest(&format!(
        "-k -n 3 -F -C -d {}",
        d.display()
    )));
    let files: Vec<_> = common::tree(&d)
        .into_iter()
        .filter(|p| !p.ends_with('/'))
        .collect();
    assert_eq!(files.len(), 3, "{files:?}");
    for f in &files {
        let m = std::fs::metadata(d.join(f)).unwrap();
        assert!(m.file_type().is_file(), "{f}");
        assert_eq!(m.permissions().mode() & 0o7777, 0o400, "{f}");
    }
    // The later phases of the same run work on them: stat, read, remove.
    ok(&common::mdtest(&format!(
        "-k -n 3 -F -T -E -r -d {}",
        d.display()
    )));
    assert!(common::tree(&d).iter().all(|p| p.ends_with('/')));
    let help = stdout(&iolab(&["mdtest", "-h"])) + &stderr(&iolab(&["mdtest", "-h"]));
    assert!(!help.contains("FIFO"), "{help}");
    assert!(help.contains("0400"), "{help}");
}

/// Command lines of the running echo agents listening on `port` (read
/// from /proc, so the test needs no ps).
fn echo_agents(port: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        if line.contains("obdfilter-agent echo") && line.contains(&format!("--port {port} ")) {
            out.push(line);
        }
    }
    out
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// `a [ b, c]` -> (a, b, c) from the tokens after a test's name.
fn figure_and_bracket(after: &str) -> (f64, f64, f64) {
    let (agg, rest) = after.trim().split_once(' ').unwrap();
    let inner = rest.trim().trim_start_matches('[');
    let (lo, hi) = inner.split_once(',').unwrap();
    let hi = hi.split(']').next().unwrap();
    (
        agg.parse().unwrap(),
        lo.trim().parse().unwrap(),
        hi.trim().parse().unwrap(),
    )
}

#[test]
fn sgpdd_line_has_the_guides_layout_and_a_measured_slowest_region() {
    let s = Scratch::new("forms-sgpdd");
    let dev = s.path("dev");
    std::fs::File::create(&dev)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let rslt = s.path("sg");
    let js = s.path("sg.json");
    // The kit's form: parameters as environment variables.
    let o = survey(
        &["disk", "--json", js.to_str().unwrap()],
        &[
            ("scsidevs", dev.to_str().unwrap()),
            ("size", "16"),
            ("crghi", "1"),
            ("thrhi", "1"),
            ("rslt", rslt.to_str().unwrap()),
        ],
    );
    ok(&o);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with(" actions: write read"), "{out}");
    // `total_size 16384K rsz 1024 thr 1 crg 1 BW MB/s 1 x SLOW = PROD MB/s`
    // for write, then the same for read, single spaces, nothing after.
    let t: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(
        t[..8],
        [
            "total_size",
            "16384K",
            "rsz",
            "1024",
            "thr",
            "1",
            "crg",
            "1"
        ],
        "{out}"
    );
    assert_eq!(t.len(), 8 + 2 * 8, "{out}");
    let two_decimals = |x: &str| {
        x.split_once('.').is_some_and(|(a, b)| {
            !a.is_empty() && b.len() == 2 && (a.to_string() + b).bytes().all(|c| c.is_ascii_digit())
        })
    };
    for a in t[8..].chunks(8) {
        assert_eq!(
            [a[1], a[2], a[3], a[5], a[7]],
            ["MB/s", "1", "x", "=", "MB/s"],
            "{out}"
        );
        assert!(
            two_decimals(a[0]) && two_decimals(a[4]) && two_decimals(a[6]),
            "{out}"
        );
        assert_eq!(a[4], a[6], "1 x slowest: {out}");
    }
    // "regions x slowest" is the region's own measured rate: its bytes
    // over its own time, which starts at its first record, after the
    // aggregate's clock.
    let doc = json(&js);
    for a in doc["payload"]["points"][0]["result"]["actions"]
        .as_array()
        .unwrap()
    {
        let r = &a["regions"][0];
        let own = r["bytes"].as_f64().unwrap() / 1048576.0 / r["elapsed_s"].as_f64().unwrap();
        let slowest = a["slowest_region_mb_per_s"].as_f64().unwrap();
        assert!((own - slowest).abs() < 1e-6, "{a}");
        assert!(r["elapsed_s"].as_f64() < a["elapsed_s"].as_f64(), "{a}");
    }
    // The same survey's summary plots.
    let o = survey(
        &[
            "plot",
            rslt.with_extension("summary").to_str().unwrap(),
            "--out",
            s.path("p").to_str().unwrap(),
        ],
        &[],
    );
    ok(&o);
    let csv = std::fs::read_to_string(s.path("p.csv")).unwrap();
    assert!(csv.contains("\n1024,1,1,write,"), "{csv}");
    assert!(csv.contains("\n1024,1,1,read,"), "{csv}");
}

#[test]
fn survey_plot_reads_the_kits_own_result_lines() {
    let s = Scratch::new("forms-plot");
    // Seed 002's lines as the kit's scripts write them: no iolab header,
    // the guide's sgpdd line over two lines.
    let sg = s.path("sgpdd.summary");
    std::fs::write(
        &sg,
        "total_size 8388608K rsz 1024 thr 1 crg 1 180.45 MB/s 1 x 180.50 \\\n        = 180.50 MB/s\n",
    )
    .unwrap();
    ok(&survey(&["plot", sg.to_str().unwrap()], &[]));
    let csv = std::fs::read_to_string(s.path("sgpdd.csv")).unwrap();
    assert_eq!(csv.lines().nth(1), Some("1024,1,1,write,180.45"), "{csv}");
    let obd = s.path("obd.summary");
    std::fs::write(
        &obd,
        "ost 10 sz 167772160K rsz 1024K obj   10 thr   10 write 10982.73 [ 601.97,2912.91] rewrite 15696.54 [1160.92,3450.85] read 12358.60 [ 938.96,2634.87] \n\
         ost 8 sz 67108864K rsz 1024 obj 8 thr 8 write 613.54 [ 64.00, 82.00]\n",
    )
    .unwrap();
    ok(&survey(&["plot", obd.to_str().unwrap()], &[]));
    let csv = std::fs::read_to_string(s.path("obd.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(
        rows,
        [
            "1024,10,10,write,10982.73",
            "1024,10,10,rewrite,15696.54",
            "1024,10,10,read,12358.60",
            "1024,8,8,write,613.54"
        ]
    );
    assert!(s.path("obd-1024-write.dat").exists());
}

#[test]
fn obdfilter_single_target_aggregate_lies_within_its_bracket() {
    let s = Scratch::new("forms-obd-one");
    let t = s.path("ost0");
    std::fs::create_dir_all(&t).unwrap();
    let o = survey(
        &[
            "obdfilter",
            "--interval-ms",
            "20",
            "--rslt",
            s.path("o").to_str().unwrap(),
        ],
        &[
            ("targets", t.to_str().unwrap()),
            ("size", "96"),
            ("nobjhi", "1"),
            ("thrhi", "2"),
            ("case", "disk"),
        ],
    );
    ok(&o);
    let out = stdout(&o);
    let mut checked = 0;
    for line in out.lines().skip(1) {
        for test in ["write", "rewrite", "read"] {
            let at = line.find(&format!(" {test} ")).unwrap() + test.len() + 2;
            let (agg, lo, hi) = figure_and_bracket(&line[at..]);
            // The line rounds to 2 decimals.
            assert!(lo - 0.01 <= agg && agg <= hi + 0.01, "{test}: {line}");
            checked += 1;
        }
    }
    assert_eq!(checked, 6, "{out}");
}

#[test]
fn kit_parameters_iolab_cannot_honour_exit_2_before_anything() {
    let s = Scratch::new("forms-kit-refuse");
    let t = s.path("t");
    std::fs::create_dir_all(&t).unwrap();
    let r = s.path("r");
    let (td, rs) = (t.to_str().unwrap(), r.to_str().unwrap());
    for (words, env, named) in [
        (
            vec!["obdfilter", "--rslt", rs],
            vec![("targets", td), ("case", "network")],
            "host names",
        ),
        (
            vec!["obdfilter", "--rslt", rs],
            vec![("targets", td), ("case", "netdisk")],
            "case=netdisk",
        ),
        (
            vec!["mds", "--rslt", rs],
            vec![("targets", td), ("stripe_count", "2")],
            "stripe_count=2",
        ),
        (
            vec!["mds", "--rslt", rs],
            vec![("targets", td), ("layer", "mdd")],
            "layer=mdd",
        ),
        (vec!["ost", "-s", "512K", td, "--rslt", rs], vec![], "512K"),
    ] {
        let o = survey(&words, &env);
        usage_error(&o, named);
        assert!(
            common::tree(&s.root) == ["t/"],
            "{words:?}: {:?}",
            common::tree(&s.root)
        );
    }
}

#[test]
fn ost_survey_size_takes_units_and_a_bare_number_is_mb() {
    let s = Scratch::new("forms-ost-size");
    let (a, b) = (s.path("a"), s.path("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    for (size, mb) in [("4M", 4), ("3", 3)] {
        let js = s.path(&format!("o{size}.json"));
        let rslt = s.path(&format!("o{size}"));
        ok(&survey(
            &[
                "ost",
                "-s",
                size,
                a.to_str().unwrap(),
                b.to_str().unwrap(),
                "--json",
                js.to_str().unwrap(),
                "--rslt",
                rslt.to_str().unwrap(),
            ],
            &[],
        ));
        assert_eq!(json(&js)["config"]["size_mb"], mb, "-s {size}");
    }
}

/// Runs `iolab WORDS...` in `dir` with none of config.sh's variables in
/// the environment.
fn iolab_in(dir: &Path, words: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.args(words).current_dir(dir).env("CI", "1");
    for v in [
        "VMSTAT_INTERVAL",
        "DISK_INTERVAL",
        "TMP",
        "CLIENT_LIST",
        "OST_LIST",
        "MDS_LIST",
    ] {
        c.env_remove(v);
    }
    c.output().unwrap()
}

#[test]
fn stats_config_sh_defaults_are_read_as_bash_reads_them() {
    let s = Scratch::new("forms-stats-defaults");
    let cfg = s.path("config.sh");
    std::fs::write(
        &cfg,
        format!(
            "TMP={}\nVMSTAT_INTERVAL=${{VMSTAT_INTERVAL:-2}}\nexport DISK_INTERVAL=\"${{DISK_INTERVAL:-0}}\"\n",
            s.path("tmp").display()
        ),
    )
    .unwrap();
    let o = iolab_in(
        &s.root,
        &[
            "stats",
            "run",
            cfg.to_str().unwrap(),
            "--tarball",
            "r.tgz",
            "--",
            "true",
        ],
    );
    ok(&o);
    let nodes: Vec<_> = std::fs::read_dir(s.path("r-csv")).unwrap().collect();
    assert_eq!(nodes.len(), 1);
    let node = nodes[0].as_ref().unwrap().path();
    // ${VMSTAT_INTERVAL:-2} used to drop vmstat.
    assert!(
        node.join("vmstat.csv").is_file(),
        "{:?}",
        common::tree(&node)
    );
    assert!(node.join("disk.csv").is_file(), "{:?}", common::tree(&node));
}

#[test]
fn stats_config_sh_substitutions_and_quotes_name_the_nodes_bash_names() {
    let s = Scratch::new("forms-stats-nodes");
    let log = s.path("rsh.log");
    let rsh = s.path("rsh");
    // A remote shell that reaches nothing: it notes the host it was asked for.
    std::fs::write(
        &rsh,
        format!("#!/bin/sh\necho \"$1\" >> {}\nexit 255\n", log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = s.path("config.sh");
    std::fs::write(
        &cfg,
        "VMSTAT_INTERVAL=0\nCLIENT_LIST='$HOME'\nOST_LIST=$(echo oss-$((1 + 1)))\n",
    )
    .unwrap();
    let o = iolab_in(
        &s.root,
        &[
            "stats",
            "start",
            cfg.to_str().unwrap(),
            "--rsh",
            rsh.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let asked = std::fs::read_to_string(&log).unwrap();
    let mut hosts: Vec<&str> = asked.lines().collect();
    hosts.sort();
    hosts.dedup();
    assert_eq!(hosts, ["$HOME", "oss-2"], "{asked}");
    // What bash refuses is refused, naming the line, before anything.
    std::fs::write(&cfg, "VMSTAT_INTERVAL=1\nCLIENT_LIST=\"a\nfi\n").unwrap();
    let o = iolab_in(&s.root, &["stats", "start", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("line "), "{}", stderr(&o));
}

#[test]
fn obdfilter_case_network_sends_the_requests_to_echo_agents() {
    let s = Scratch::new("forms-obd-network");
    // A remote shell that runs the agent here: the hosts are loopback
    // names, so every byte crosses a TCP connection.
    let rsh = s.path("rsh");
    std::fs::write(&rsh, "#!/bin/sh\nshift\nexec \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Free now, and below the range connections take their source
    // ports from (a port from the pid landed there and was taken).
    let port = common::e2e::free_ports(1).to_string();
    let js = s.path("net.json");
    let o = survey(
        &[
            "obdfilter",
            "--rsh",
            rsh.to_str().unwrap(),
            "--remote-iolab",
            env!("CARGO_BIN_EXE_iolab"),
            "--echo-port",
            &port,
            "--interval-ms",
            "50",
            "--json",
            js.to_str().unwrap(),
            "--rslt",
            s.path("net").to_str().unwrap(),
        ],
        &[
            ("case", "network"),
            ("targets", "127.0.0.1 localhost"),
            ("size", "8"),
            ("nobjhi", "1"),
            ("thrhi", "2"),
        ],
    );
    ok(&o);
    let out = stdout(&o);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .contains("Obdfilter-survey for case=network from"),
        "{out}"
    );
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(lines.len(), 2, "thr 1 and 2: {out}");
    for l in &lines {
        assert!(
            l.starts_with("ost  2 sz    16384K rsz 1024 obj    2 "),
            "{l}"
        );
        assert!(
            l.contains(" write ") && l.contains(" rewrite ") && l.contains(" read "),
            "{l}"
        );
        assert!(!l.contains("ERROR") && !l.contains("SHORT"), "{l}");
    }
    // Each agent received write and rewrite (8 MiB each) and sent read's
    // 8 MiB, at both points; one request per 1 MiB record.
    let doc = json(&js);
    let notes: Vec<String> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    for host in ["127.0.0.1", "localhost"] {
        let want = format!(
            "{host}: the echo agent received {} bytes and sent {} bytes in 48 requests",
            2 * 2 * (8 << 20),
            2 * (8 << 20)
        );
        assert!(notes.contains(&want), "{notes:?}");
    }
    // The network case states its figures as the disk case does: each
    // point's write, rewrite and read bandwidth.
    let figures = doc["figures"].as_array().unwrap();
    assert_eq!(figures.len(), 2 * 3, "{figures:?}");
    for f in figures {
        assert_eq!(f["metric"], "bandwidth", "{f}");
        assert!(f["stat"]["mean"].as_f64().unwrap() > 0.0, "{f}");
    }
    // No agent is left running.
    let left = echo_agents(&port);
    assert!(left.is_empty(), "{left:?}");
    // A path is not a host in the network case.
    let o = survey(
        &["obdfilter", "--rslt", s.path("bad").to_str().unwrap()],
        &[("case", "network"), ("targets", "oss1:/srv/ost0")],
    );
    usage_error(&o, "host names");
}

/// A network-case host that cannot be reached fails the survey before
/// its first point, naming the host (every point ran to "0.00 ERROR",
/// then exit 1): one whose remote shell cannot start the agent (ssh's
/// complaint is passed on), and a fake-cluster host whose agent runs in
/// its namespace behind the subnet's `unreachable` route. Exit 1, no
/// point line, no agent left running.
#[test]
fn obdfilter_case_network_names_a_host_it_cannot_reach_before_the_first_point() {
    let name = "obdfilter_case_network_names_a_host_it_cannot_reach_before_the_first_point";
    let s = Scratch::new("forms-obd-unreach");
    let cluster = match iolab_testkit::FakeCluster::new(1) {
        Ok(c) => c,
        Err(why) => {
            common::skip_or_fail(name, &why);
            return;
        }
    };
    let (ns, addr) = cluster.host(0);
    // oss-gone: the remote shell fails as ssh does for an unknown host;
    // the cluster's address: the agent runs in its namespace; anything
    // else: here.
    let rsh = s.path("rsh");
    std::fs::write(
        &rsh,
        format!(
            "#!/bin/sh\nhost=$1; shift\ncase $host in\n\
             oss-gone) echo \"ssh: Could not resolve hostname oss-gone: Name or service not known\" >&2; exit 255 ;;\n\
             {addr}) exec ip netns exec {ns} \"$@\" ;;\n\
             esac\nexec \"$@\"\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let port = (20000 + (std::process::id() + 3000) % 20000).to_string();
    for (targets, host, why) in [
        (
            "127.0.0.1 oss-gone",
            "oss-gone",
            "Could not resolve hostname oss-gone",
        ),
        (&*addr.to_string(), &*addr.to_string(), "No route to host"),
    ] {
        let o = survey(
            &[
                "obdfilter",
                "--rsh",
                rsh.to_str().unwrap(),
                "--remote-iolab",
                env!("CARGO_BIN_EXE_iolab"),
                "--echo-port",
                &port,
                "--rslt",
                s.path("u").to_str().unwrap(),
            ],
            &[
                ("case", "network"),
                ("targets", targets),
                ("size", "8"),
                ("thrhi", "2"),
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
        let err = stderr(&o);
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("iolab survey obdfilter: {host}: ")))
            .unwrap_or_else(|| panic!("{host} not named: {err}"));
        assert!(line.contains(why), "{line}");
        assert!(err.contains("no point was run"), "{err}");
        assert!(
            !stdout(&o).contains("ERROR") && !stdout(&o).contains(" rsz "),
            "{}",
            stdout(&o)
        );
        let left = echo_agents(&port);
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn obdfilter_case_netdisk_writes_through_the_agents_and_all_remote_targets_run() {
    let s = Scratch::new("forms-obd-netdisk");
    let rsh = s.path("rsh");
    std::fs::write(&rsh, "#!/bin/sh\nshift\nexec \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (a, b) = (s.path("ost0"), s.path("ost1"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let port = (20000 + (std::process::id() + 7000) % 20000).to_string();
    let js = s.path("nd.json");
    let targets = format!("127.0.0.1:{} localhost:{}", a.display(), b.display());
    let rshs = rsh.to_str().unwrap();
    let o = survey(
        &[
            "obdfilter",
            "--rsh",
            rshs,
            "--remote-iolab",
            env!("CARGO_BIN_EXE_iolab"),
            "--echo-port",
            &port,
            "--interval-ms",
            "50",
            "--json",
            js.to_str().unwrap(),
            "--rslt",
            s.path("nd").to_str().unwrap(),
        ],
        &[
            ("case", "netdisk"),
            ("targets", &targets),
            ("size", "8"),
            ("nobjhi", "2"),
            ("thrhi", "2"),
        ],
    );
    ok(&o);
    let out = stdout(&o);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .contains("for case=netdisk from"),
        "{out}"
    );
    // (1 obj, 1 thr), (1, 2), (2, 2): the reads read back what the agent
    // wrote to its file system (a read of a missing object is an ERROR).
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("ERROR") && l.contains(" read ")),
        "{out}"
    );
    let notes = json(&js)["notes"].to_string();
    assert!(
        notes.contains(&format!("received {} bytes", 3 * 2 * (8 << 20))),
        "{notes}"
    );
    // Each agent removed its objects and directory.
    assert!(common::tree(&a).is_empty() && common::tree(&b).is_empty());
    // The disk case with every target on another host is accepted.
    let o = survey(
        &[
            "obdfilter",
            "--remote-iolab",
            env!("CARGO_BIN_EXE_iolab"),
            "--rsh",
            rshs,
            "--interval-ms",
            "50",
            "--rslt",
            s.path("dk").to_str().unwrap(),
        ],
        &[
            ("targets", &format!("127.0.0.1:{}", a.display())),
            ("size", "4"),
            ("nobjhi", "1"),
            ("thrhi", "1"),
        ],
    );
    ok(&o);
    assert!(stdout(&o).contains("for case=disk from"), "{}", stdout(&o));
    assert!(common::tree(&a).is_empty());
}

#[test]
fn obdfilter_echo_agents_end_when_the_survey_is_killed() {
    let s = Scratch::new("forms-obd-kill");
    let rsh = s.path("rsh");
    std::fs::write(&rsh, "#!/bin/sh\nshift\nexec \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let port = (20000 + (std::process::id() + 13000) % 20000).to_string();
    let agents = || echo_agents(&port).len();
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.args(["survey", "obdfilter", "--rsh", rsh.to_str().unwrap()])
        .args([
            "--remote-iolab",
            env!("CARGO_BIN_EXE_iolab"),
            "--echo-port",
            &port,
        ])
        .args(["--rslt", s.path("k").to_str().unwrap()])
        .env("case", "network")
        .env("targets", "127.0.0.1")
        .env("size", "1000000")
        .env("nobjhi", "1")
        .env("thrhi", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut survey = c.spawn().unwrap();
    let mut seen = false;
    for _ in 0..200 {
        if agents() > 0 {
            seen = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    survey.kill().unwrap();
    let _ = survey.wait();
    assert!(seen, "the agent never started");
    let mut left = agents();
    for _ in 0..200 {
        if left == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = agents();
    }
    assert_eq!(
        left, 0,
        "an echo agent outlived the survey killed with SIGKILL"
    );
}

#[test]
fn xdd_e2e_source_side_refuses_what_a_copy_cannot_do_at_parse_time() {
    let s = Scratch::new("forms-e2e-source");
    std::fs::write(s.path("src"), vec![7u8; 8192]).unwrap();
    let base =
        "-op read -target src -reqsize 1 -numreqs 8 -e2e issource -e2e destination 127.0.0.1:40999";
    for (extra, named) in [
        ("-seek random", "-seek"),
        ("-seek stagger 4", "-seek"),
        ("-rwratio 50", "-rwratio"),
        ("-engine uring", "-engine"),
    ] {
        let o = xdd_in(&s.root, &format!("{base} {extra}"));
        usage_error(&o, named);
        // Refused before any connection is tried: no wait for a peer.
        assert!(!stderr(&o).contains("cannot connect"), "{}", stderr(&o));
    }
    assert_eq!(common::tree(&s.root), ["src"]);
}

/// A summary line with a figure no chart can draw (inf, NaN, 1.7e308:
/// plotters looked for ticks on it without end) or a key that is not a
/// number (`thr 2O`, `rsz ../../x`, dropped in silence before) is exit 2
/// naming the line, with nothing written.
#[test]
fn survey_plot_refuses_a_line_it_cannot_read_or_draw() {
    let s = Scratch::new("forms-plot-bad");
    let head = "ost 1 sz 1K rsz 1024K obj 1";
    for (i, line) in [
        format!("{head} thr 1 write inf [1,2]"),
        format!("{head} thr 1 write NaN [1,2]"),
        format!("{head} thr 1 write 1.7e308 [1,2]"),
        format!("{head} thr 2O write 300.0 [1,2]"),
        "ost 1 sz 1K rsz ../../x obj 1 thr 1 write 3.0 [1,2]".to_string(),
    ]
    .iter()
    .enumerate()
    {
        let f = s.path(&format!("bad{i}.summary"));
        std::fs::write(
            &f,
            format!("ost 1 sz 1K rsz 1024K obj 1 thr 1 write 100.0 [1,2]\n{line}\n"),
        )
        .unwrap();
        let o = survey(&["plot", f.to_str().unwrap()], &[]);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains("line 2: "), "{line}: {}", stderr(&o));
        let made: Vec<String> = common::tree(&s.root)
            .into_iter()
            .filter(|n| !n.ends_with(".summary"))
            .collect();
        assert!(made.is_empty(), "{line}: {made:?}");
    }
}
