//! `iolab xddcp` and end-to-end copies across fake hosts: network
//! namespaces on a private subnet (iolab_testkit, behind an
//! `unreachable` route), the remote shell `ip netns exec`. A file list
//! copied byte-identical; a second run refuses to overwrite, `-a`
//! resumes; `-f` moves to the next free port range; two destination
//! addresses (guide 10.6); bad input exits 2 having created nothing.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::e2e::{free_ports, random_file, same, words, Bg};
use common::Scratch;
use iolab_testkit::FakeCluster;
use std::path::Path;
use std::process::Output;

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// `iolab xddcp ARGS...` run on fake host 0 (the source host).
fn xddcp_on(c: &FakeCluster, dir: &Path, args: &[String]) -> Output {
    let (ns, _) = c.host(0);
    std::process::Command::new("ip")
        .args(["netns", "exec", &ns, IOLAB, "xddcp"])
        .args(args)
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap()
}

#[test]
fn xddcp_draws_a_progress_bar_on_a_terminal_only() {
    let Some(c) = common::fake_cluster("xddcp_progress", 2) else {
        return;
    };
    let s = Scratch::new("xddcp-progress");
    let src = s.path("big");
    random_file(&src, 8 << 20);
    let (ns0, _) = c.host(0);
    let (ns1, a1) = c.host(1);
    let line = |dst: &str| {
        format!(
            "ip netns exec {ns0} {IOLAB} xddcp -t 2 --timeout 30 --rsh 'ip netns exec' --remote-iolab {IOLAB} {} {ns1}@{a1}:{}",
            src.display(),
            s.path(dst).display()
        )
    };
    // util-linux's `script` gives the copy a terminal; CI unset so that
    // the bar is drawn there.
    let tty = std::process::Command::new("script")
        .args(["-qec", &line("on-tty"), "/dev/null"])
        .env_remove("CI")
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{seen}");
    assert!(
        seen.contains("8.00 MiB"),
        "a bar of the file's size: {seen:?}"
    );
    assert!(seen.contains("total: 1 of 1 files copied"), "{seen}");
    assert!(same(&src, &s.path("on-tty")));
    // In a pipe, only the lines.
    let o = std::process::Command::new("sh")
        .args(["-c", &line("in-pipe")])
        .env_remove("CI")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(
        !common::stderr(&o).contains("MiB"),
        "{}",
        common::stderr(&o)
    );
    assert!(
        !common::stdout(&o).contains("MiB"),
        "{}",
        common::stdout(&o)
    );
    assert!(same(&src, &s.path("in-pipe")));
    // No heartbeat file is left behind.
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".progress.T0000"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn xddcp_copies_a_file_list_across_fake_hosts_and_never_overwrites() {
    let Some(c) = common::fake_cluster("xddcp_file_list", 2) else {
        return;
    };
    let s = Scratch::new("xddcp-list");
    std::fs::create_dir_all(s.path("src")).unwrap();
    std::fs::create_dir_all(s.path("dst")).unwrap();
    std::fs::create_dir_all(s.path("dst2")).unwrap();
    let sizes = [1_048_576 + 4321, 300_000, 2 << 20];
    let mut list = String::new();
    for (i, n) in sizes.iter().enumerate() {
        let f = s.path(&format!("src/f{i}"));
        random_file(&f, *n);
        list += &format!("{}\n", f.display());
    }
    std::fs::write(s.path("list.txt"), list).unwrap();
    let (ns1, a1) = c.host(1);
    let to = |dir: &str| format!("{ns1}@{a1}:{}", s.path(dir).display());
    let args = |extra: &str, dir: &str| {
        let mut w: Vec<String> = words("-F -t 3 --timeout 30");
        w.extend(["--rsh".into(), "ip netns exec".into()]);
        w.extend(["--remote-iolab".into(), IOLAB.into()]);
        w.extend(words(extra));
        w.push(s.path("list.txt").display().to_string());
        w.push(to(dir));
        w
    };
    let o = xddcp_on(&c, &s.root, &args("", "dst"));
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", common::stderr(&o));
    let planned: usize = sizes.iter().sum();
    assert!(
        common::stderr(&o).starts_with(&format!("xddcp: 3 file(s), {planned} bytes to copy\n")),
        "the plan first: {}",
        common::stderr(&o)
    );
    assert_eq!(
        out.lines().filter(|l| l.contains(" MB/s")).count(),
        4,
        "{out}"
    );
    assert!(out.contains("total: 3 of 3 files copied"), "{out}");
    for i in 0..3 {
        let (a, b) = (s.path(&format!("src/f{i}")), s.path(&format!("dst/f{i}")));
        assert!(same(&a, &b), "f{i} differs");
    }
    // The same copy again: the files exist, nothing is overwritten.
    let before = std::fs::metadata(s.path("dst/f0"))
        .unwrap()
        .modified()
        .unwrap();
    let o = xddcp_on(&c, &s.root, &args("", "dst"));
    assert_eq!(o.status.code(), Some(2), "{}", common::stdout(&o));
    assert!(
        common::stderr(&o).contains("does not overwrite"),
        "{}",
        common::stderr(&o)
    );
    let after = std::fs::metadata(s.path("dst/f0"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after, "untouched");
    // -a keeps a restart file: a second run finds every file complete.
    let o = xddcp_on(&c, &s.root, &args("-a", "dst2"));
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let o = xddcp_on(&c, &s.root, &args("-a", "dst2"));
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", common::stderr(&o));
    assert!(out.contains("total: 3 of 3 files copied, 0 bytes"), "{out}");
    for i in 0..3 {
        let (a, b) = (s.path(&format!("src/f{i}")), s.path(&format!("dst2/f{i}")));
        assert!(same(&a, &b), "f{i} differs");
    }
}

#[test]
fn xddcp_takes_the_next_free_port_range_with_f_instead_of_killing() {
    let Some(c) = common::fake_cluster("xddcp_f", 2) else {
        return;
    };
    let s = Scratch::new("xddcp-f");
    random_file(&s.path("a"), 500_000);
    let (ns1, a1) = c.host(1);
    // Someone else holds port 40011 on the destination host.
    let held = c
        .in_host(1, || std::net::TcpListener::bind((a1, 40011)).unwrap())
        .unwrap();
    let args = |f: bool, dst: &str| {
        let mut w: Vec<String> = vec![
            "-t".into(),
            "2".into(),
            "--rsh".into(),
            "ip netns exec".into(),
        ];
        w.extend([
            "--remote-iolab".into(),
            IOLAB.into(),
            "--timeout".into(),
            "30".into(),
        ]);
        if f {
            w.push("-f".into());
        }
        w.push(s.path("a").display().to_string());
        w.push(format!("{ns1}@{a1}:{}", s.path(dst).display()));
        w
    };
    let o = xddcp_on(&c, &s.root, &args(false, "b"));
    assert_eq!(o.status.code(), Some(2), "{}", common::stdout(&o));
    let e = common::stderr(&o);
    assert!(e.contains("40011") && e.contains("-f"), "{e}");
    assert!(!s.path("b").exists());
    // Links planted at the logs' names are replaced, their files kept.
    std::fs::write(s.path("victim"), b"precious").unwrap();
    for side in ["source", "destination"] {
        std::os::unix::fs::symlink(s.path("victim"), s.path(&format!("xddcp.a.{side}.log")))
            .unwrap();
    }
    let mut w = args(true, "b");
    w.insert(0, "-v".into());
    let o = xddcp_on(&c, &s.root, &w);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(same(&s.path("a"), &s.path("b")));
    // -v: both sides' logs here, time stamps on both sides.
    let src_log = std::fs::read_to_string(s.path("xddcp.a.source.log")).unwrap();
    assert!(src_log.contains("COMBINED"), "{src_log}");
    let dst_log = std::fs::read_to_string(s.path("xddcp.a.destination.log")).unwrap();
    assert!(dst_log.contains("listening on"), "{dst_log}");
    assert_eq!(std::fs::read(s.path("victim")).unwrap(), b"precious");
    assert!(!s.path("xddcp.a.source.log").is_symlink());
    assert!(s.path("xddcp.a.target.0000.csv").exists());
    assert!(s.path("b.xddcp-ts.target.0000.csv").exists());
    drop(held);
}

/// Guide 10.6: one destination host with two addresses, each with its
/// own port range; QThreads 0-1 go to the first, 2-3 to the second.
#[test]
fn e2e_with_two_destination_addresses_across_fake_hosts() {
    let Some(c) = common::fake_cluster("e2e_two_addresses", 2) else {
        return;
    };
    let s = Scratch::new("e2e-two-addr");
    let bytes = 3 << 20;
    random_file(&s.path("src.dat"), bytes);
    let (ns0, _) = c.host(0);
    let (ns1, a1) = c.host(1);
    // A second address for host 1, on the same private subnet.
    let o = a1.octets();
    let a2 = std::net::Ipv4Addr::new(o[0], o[1], o[2], 101);
    let st = std::process::Command::new("ip")
        .args([
            "-n",
            &ns1,
            "addr",
            "add",
            &format!("{a2}/24"),
            "dev",
            "eth0",
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let common = format!(
        "-reqsize 64 -bytes {bytes} -e2e destination {a1}:40010,2 -e2e destination {a2}:41000,2 -e2e timeout 30"
    );
    let side = |ns: &str, line: String| {
        let mut w = words(&format!("ip netns exec {ns} {IOLAB} xdd"));
        w.extend(words(&line));
        w
    };
    let mut d = Bg::start_argv(
        &s.root,
        &side(
            &ns1,
            format!("-op write -target dst.dat {common} -e2e isdestination --json d.json"),
        ),
        &[],
    );
    assert!(d.wait_for("listening on"), "{}", d.stderr_now());
    assert!(
        d.stderr_now().contains(&format!("{a2}:41001")),
        "{}",
        d.stderr_now()
    );
    let src = Bg::start_argv(
        &s.root,
        &side(
            &ns0,
            format!("-op read -target src.dat {common} -e2e issource"),
        ),
        &[],
    )
    .wait(60);
    let dst = d.wait(60);
    assert_eq!(
        (src.code, dst.code),
        (Some(0), Some(0)),
        "{}\n{}",
        src.stderr,
        dst.stderr
    );
    assert!(same(&s.path("src.dat"), &s.path("dst.dat")));
    let dj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.path("d.json")).unwrap()).unwrap();
    assert_eq!(
        dj["config"]["targets"][0]["queuedepth"].as_u64(),
        Some(4),
        "implied by the ports"
    );
}

#[test]
fn bad_xddcp_command_lines_exit_2_and_create_nothing() {
    let s = Scratch::new("xddcp-bad");
    random_file(&s.path("a"), 1000);
    std::fs::write(s.path("list"), "a\nnope\n").unwrap();
    let rsh = "--rsh=ip netns exec";
    for (line, want) in [
        ("nope h:/x", "nope"),
        ("a h", "destination"),
        ("a h:", "destination"),
        ("-t 0 a h:/x", "-t"),
        ("-t 99999 a h:/x", "-t"),
        ("-p 0 a h:/x", "-p"),
        ("-p 65535 -t 2 a h:/x", "-p"),
        ("a h:/x 2000", "more than"),
        ("a h:/x 0", "nothing to copy"),
        ("a h:/x 12q", "size"),
        ("-d a h:/x", "512"),
        ("-F list h:/d", "nope"),
        ("-F nolist h:/d", "-F"),
        ("-F a h:/d 10", "size"),
        ("--key /no/key a h:/x", "--key"),
        ("--timeout 0 a h:/x", "--timeout"),
        ("--bogus a h:/x", "--bogus"),
        ("", "SOURCE_FILE"),
    ] {
        let mut w = vec!["xddcp".to_string(), rsh.to_string()];
        w.extend(words(line));
        let o = std::process::Command::new(IOLAB)
            .args(&w)
            .current_dir(&s.root)
            .output()
            .unwrap();
        let e = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{line}: {e}");
        assert!(e.contains(want), "{line}: {e}");
    }
    let mut left = common::tree(&s.root);
    left.retain(|f| f != "a" && f != "list");
    assert!(left.is_empty(), "{left:?}");
    // Through a link named xddcp: the same command.
    std::os::unix::fs::symlink(IOLAB, s.path("xddcp")).unwrap();
    let o = std::process::Command::new(s.path("xddcp"))
        .args(["-t", "0", "a", "h:/x"])
        .current_dir(&s.root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("-t"), "{}", common::stderr(&o));
    let o = std::process::Command::new(s.path("xddcp"))
        .arg("-h")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(
        common::stdout(&o).contains("restart file"),
        "{}",
        common::stdout(&o)
    );
}

/// `-a`: a copy stopped by SIGTERM (as Ctrl-C) exits 130 and leaves its
/// partial file and restart record; the same command again moves only
/// the rest, and the file ends byte-identical.
#[test]
fn xddcp_a_resumes_an_interrupted_copy_when_run_again() {
    let Some(c) = common::fake_cluster("xddcp_resume", 2) else {
        return;
    };
    let s = Scratch::new("xddcp-resume");
    let total: usize = 256 << 20;
    // Distinct bytes everywhere (fast to make): a mixing of the offset.
    let data: Vec<u8> = (0..total / 8)
        .flat_map(|i| ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555).to_le_bytes())
        .collect();
    std::fs::write(s.path("big"), &data).unwrap();
    drop(data);
    let (ns0, _) = c.host(0);
    let (ns1, a1) = c.host(1);
    let argv: Vec<String> = vec![
        "ip".into(),
        "netns".into(),
        "exec".into(),
        ns0,
        IOLAB.into(),
        "xddcp".into(),
        "-a".into(),
        "-t".into(),
        "2".into(),
        "--rsh".into(),
        "ip netns exec".into(),
        "--remote-iolab".into(),
        IOLAB.into(),
        s.path("big").display().to_string(),
        format!("{ns1}@{a1}:{}", s.path("copy").display()),
    ];
    let first = Bg::start_argv(&s.root, &argv, &[]);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // The copy is built under its partial name until complete.
    while std::fs::metadata(s.path("copy.partial")).map_or(0, |m| m.len()) < 16 << 20 {
        assert!(std::time::Instant::now() < until, "no data moved");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: kill has no memory effects; the pid is our child's.
    unsafe { libc::kill(first.pid() as i32, libc::SIGTERM) };
    let first = first.wait(60);
    assert_eq!(first.code, Some(130), "{}{}", first.stdout, first.stderr);
    // Said as interrupted, not as a failure (it read "FAILED:
    // destination side: xdd: error: ...; source side: interrupted").
    let line = first.stderr.lines().find(|l| l.contains(" -> "));
    let line = line.unwrap_or_default();
    assert!(
        line.contains("  interrupted") && !line.contains("FAILED") && !line.contains("error"),
        "{}",
        first.stderr
    );
    let left = std::fs::read_to_string(s.path("copy.restart")).unwrap();
    assert!(!s.path("copy").exists() && s.path("copy.partial").is_file());
    assert!(!left.contains(&format!("offset {total}")), "{left}");
    // It says what it left and how to go on, and counts the bytes that
    // reached the destination (it said "0 bytes" and nothing of what it
    // left).
    let offset: u64 = left
        .lines()
        .find_map(|l| l.strip_prefix("offset "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    let said = format!(
        "left {} and its restart record {}, which records its first {offset} bytes as written; run the same command again (with -a)",
        s.path("copy.partial").display(),
        s.path("copy.restart").display()
    );
    assert!(first.stderr.contains(&said), "{}", first.stderr);
    let moved = total_bytes(&first.stdout);
    assert!(
        moved >= offset && moved > 0 && moved <= total as u64,
        "bytes written, at least those recorded ({offset}): {}",
        first.stdout
    );
    let again = Bg::start_argv(&s.root, &argv, &[]).wait(120);
    assert_eq!(again.code, Some(0), "{}{}", again.stdout, again.stderr);
    let moved: u64 = again
        .stdout
        .lines()
        .find(|l| l.contains(" bytes ") && l.contains(" -> "))
        .and_then(|l| l.split_whitespace().find_map(|w| w.parse().ok()))
        .unwrap();
    assert!(
        moved > 0 && moved < total as u64,
        "only the rest: {moved} left={left} {}{}",
        again.stdout,
        again.stderr
    );
    assert_eq!(
        std::fs::read(s.path("big")).unwrap(),
        std::fs::read(s.path("copy")).unwrap(),
        "byte-identical"
    );
}

/// The bytes of xddcp's `total:` line.
fn total_bytes(stdout: &str) -> u64 {
    let line = stdout.lines().find(|l| l.contains("total: ")).unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| w.starts_with("bytes")).unwrap();
    words[at - 1].parse().unwrap()
}

/// `iolab xddcp --rsh local -t 2 -p PORT ARGS...` in `dir`, the
/// destination side a process of this host (no namespaces needed).
fn xddcp_local(dir: &Path, args: &[String]) -> Output {
    let port = free_ports(2).to_string();
    std::process::Command::new(IOLAB)
        .args(["xddcp", "--rsh", "local", "-t", "2", "-p", &port])
        .args(args)
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap()
}

/// A destination the copy cannot make (a link to nothing at its name,
/// a missing directory, absolute or relative) is refused by the
/// destination side before it listens: exit 2 naming it, the source
/// never started, nothing made, 0 bytes in the summary and the JSON.
/// Before, the source sent every byte, the destination failed to open
/// its file, and xddcp said exit 1 and "300000 bytes".
#[test]
fn a_destination_that_cannot_be_made_is_refused_before_any_data_moves() {
    let s = Scratch::new("xddcp-bad-dest");
    random_file(&s.path("src"), 300_000);
    std::fs::create_dir(s.path("dst")).unwrap();
    std::os::unix::fs::symlink("../newfile", s.path("dst/dangling")).unwrap();
    let cases = [
        (
            s.path("dst/dangling").display().to_string(),
            "symbolic link",
        ),
        (s.path("nodir/copy").display().to_string(), "does not exist"),
        (
            "relative/c".to_string(),
            "its directory relative does not exist",
        ),
        (s.path("dst").display().to_string(), "is a directory"),
    ];
    for (dest, why) in cases {
        let json = s.path("r.json");
        let o = xddcp_local(
            &s.root,
            &[
                "--json".into(),
                json.display().to_string(),
                s.path("src").display().to_string(),
                format!("127.0.0.1:{dest}"),
            ],
        );
        let (out, err) = (common::stdout(&o), common::stderr(&o));
        assert_eq!(o.status.code(), Some(2), "{dest}: {out}{err}");
        assert!(
            err.contains(&format!("destination {dest}: ")) && err.contains(why),
            "{err}"
        );
        assert!(!err.contains("source side"), "the source never ran: {err}");
        assert_eq!(total_bytes(&out), 0, "{out}");
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(doc["payload"]["bytes"], 0, "{doc}");
        assert_eq!(doc["payload"]["files"][0]["bytes"], 0, "{doc}");
        assert!(!s.path("newfile").exists() && !s.path("nodir").exists());
        assert!(!s.path("relative").exists());
    }
}

/// `-a` with a link planted at `DESTINATION.restart`: refused (exit 2,
/// the link named) without opening it; the file it leads to is neither
/// read as a record nor written. Before, the destination parsed the
/// victim and said "no 'version' line".
#[test]
fn a_link_at_the_restart_files_name_is_refused_unopened() {
    let s = Scratch::new("xddcp-restart-link");
    random_file(&s.path("src"), 3000);
    std::fs::create_dir(s.path("dst")).unwrap();
    std::fs::write(s.path("victim"), "secret line one\n").unwrap();
    std::os::unix::fs::symlink("../victim", s.path("dst/copy.restart")).unwrap();
    let o = xddcp_local(
        &s.root,
        &[
            "-a".into(),
            s.path("src").display().to_string(),
            format!("127.0.0.1:{}", s.path("dst/copy").display()),
        ],
    );
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let named = format!(
        "{} is a symbolic link",
        s.path("dst/copy.restart").display()
    );
    assert!(err.contains(&named), "{err}");
    assert!(!err.contains("version"), "the victim was parsed: {err}");
    assert_eq!(
        std::fs::read_to_string(s.path("victim")).unwrap(),
        "secret line one\n"
    );
    assert!(!s.path("dst/copy").exists() && !s.path("dst/copy.partial").exists());
}

/// `-a` in a shared (1777) destination directory never adopts a partial
/// copy or a restart record this user did not leave: another user's
/// (uid 65534), or one others may write. Exit 2 before anything, the
/// planted files named and left as they were, no copy made. Before, the
/// planted `copy.partial` was moved to `copy` and resumed, so its owner's
/// bytes became the start of the copy.
#[test]
fn a_partial_copy_or_record_this_user_did_not_leave_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("xddcp-planted-partial");
    random_file(&s.path("src"), 3000);
    let dst = s.path("dst");
    std::fs::create_dir(&dst).unwrap();
    std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let (partial, record) = (dst.join("copy.partial"), dst.join("copy.restart"));
    let plant = |owner: u32, modes: (u32, u32)| {
        std::fs::write(&partial, vec![b'P'; 3000]).unwrap();
        std::fs::write(
            &record,
            format!(
                "# iolab xdd restart file\nversion 2\nsource {}\nsource_size 3000\nsource_mtime_ns 1\nsource_ctime_ns 1\nsource_ino 1\ndestination {}\npass 1\noffset 1000\ntotal 3000\nupdated_unix_ns 1\n",
                s.path("src").display(),
                dst.join("copy").display()
            ),
        )
        .unwrap();
        for (p, m) in [(&partial, modes.0), (&record, modes.1)] {
            std::os::unix::fs::chown(p, Some(owner), None).unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        }
    };
    let cases = [
        (
            65534,
            (0o644, 0o644),
            "copy.partial is not taken: owned by uid 65534",
        ),
        (
            0,
            (0o666, 0o644),
            "copy.partial is not taken: other users may change it",
        ),
        (
            0,
            (0o644, 0o666),
            "copy.restart is not taken: other users may change it",
        ),
    ];
    for (owner, modes, why) in cases {
        plant(owner, modes);
        let o = xddcp_local(
            &s.root,
            &[
                "-a".into(),
                s.path("src").display().to_string(),
                format!("127.0.0.1:{}", dst.join("copy").display()),
            ],
        );
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{why}: {err}");
        assert!(err.contains(why), "{why}: {err}");
        assert!(!dst.join("copy").exists(), "{why}: a copy was made");
        assert_eq!(std::fs::read(&partial).unwrap(), vec![b'P'; 3000]);
        assert!(std::fs::read_to_string(&record)
            .unwrap()
            .contains("offset 1000"));
    }
}

/// Rewrites the first MiB of `p` in place: same size, same inode.
fn change_first_mib(p: &Path) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    let mut mib = vec![0u8; 1 << 20];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), &mut mib).unwrap();
    f.write_all_at(&mib, 0).unwrap();
}

/// `-a` after the source changed (rewritten in place, same size): the
/// resume of a stopped copy, and the rerun of a finished one, are exit 2
/// before any byte moves, saying what to remove; what was copied and
/// its record stay as they were. Following the advice copies anew.
/// Before, both said "1 of 1 files copied", exit 0, and the copy held
/// old bytes below the record's offset and new ones above it.
#[test]
fn xddcp_a_refuses_to_resume_from_a_changed_source() {
    let s = Scratch::new("xddcp-changed-source");
    let src = s.path("m.bin");
    random_file(&src, 128 << 20);
    std::fs::create_dir(s.path("dd")).unwrap();
    let dst = s.path("dd/m");
    let (partial, record) = (s.path("dd/m.partial"), s.path("dd/m.restart"));
    let args: Vec<String> = vec![
        "-a".into(),
        src.display().to_string(),
        format!("127.0.0.1:{}", dst.display()),
    ];
    let cp = xddcp_local_bg(&s.root, &args);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) < 8 << 20 {
        assert!(std::time::Instant::now() < until, "no data moved");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: kill has no memory effects; the pid is our child's.
    unsafe { libc::kill(cp.pid() as i32, libc::SIGTERM) };
    let e = cp.wait(60);
    assert_eq!(e.code, Some(130), "{}{}", e.stdout, e.stderr);
    let refused = |copy: &Path| {
        let held = (
            std::fs::read(copy).unwrap(),
            std::fs::read(&record).unwrap(),
        );
        change_first_mib(&src);
        let o = xddcp_local_bg(&s.root, &args).wait(120);
        assert_eq!(o.code, Some(2), "{}{}", o.stdout, o.stderr);
        let said = format!(
            "remove {} and {} to start over",
            record.display(),
            copy.display()
        );
        assert!(
            o.stderr.contains("changed since the restart file") && o.stderr.contains(&said),
            "{}",
            o.stderr
        );
        let now = (
            std::fs::read(copy).unwrap(),
            std::fs::read(&record).unwrap(),
        );
        assert!(now == held, "a refused resume changes nothing");
    };
    refused(&partial);
    assert!(!dst.exists());
    std::fs::remove_file(&record).unwrap();
    std::fs::remove_file(&partial).unwrap();
    let o = xddcp_local_bg(&s.root, &args).wait(120);
    assert_eq!(o.code, Some(0), "{}{}", o.stdout, o.stderr);
    assert!(same(&src, &dst));
    // A finished copy's record (offset = total): a rerun after the
    // source changed is refused too, not "0 bytes, copied".
    refused(&dst);
}

/// A file that fails is reported once, on standard error (its FAILED
/// line used to be printed on both standard output and standard error).
#[test]
fn a_failed_file_is_reported_once() {
    let Some(c) = common::fake_cluster("xddcp_failed_once", 2) else {
        return;
    };
    let s = Scratch::new("xddcp-failed-once");
    random_file(&s.path("a"), 100_000);
    let (ns1, a1) = c.host(1);
    let mut w: Vec<String> = words("-t 1 --timeout 10");
    // The far side cannot start: the copy of this file fails.
    w.extend(["--rsh".into(), "ip netns exec".into()]);
    w.extend(["--remote-iolab".into(), "/nonexistent/iolab".into()]);
    w.push(s.path("a").display().to_string());
    w.push(format!("{ns1}@{a1}:{}", s.path("b").display()));
    let o = xddcp_on(&c, &s.root, &w);
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let failed = |t: &str| t.lines().filter(|l| l.contains("FAILED")).count();
    assert_eq!(
        (failed(&out), failed(&err)),
        (0, 1),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.contains("total: 0 of 1 files copied"), "{out}");
}

/// The children of process `pid` whose command line holds `word`.
fn children_with(pid: u32, word: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // The parent is the second field after the command's parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u32>().ok());
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if ppid == Some(pid) && String::from_utf8_lossy(&cmd).contains(word) {
            out.push(p);
        }
    }
    out
}

/// kill -9 of the source side of a real copy, as soon as it starts
/// (before all its QThreads have connected): xddcp notices at once, stops
/// the destination, which removes its partial file, and names the signal.
/// Before, it waited out the whole --timeout and said "exit status 1".
#[test]
fn kill_9_of_the_source_side_ends_the_copy_at_once_naming_the_signal() {
    let Some(c) = common::fake_cluster("xddcp_source_killed", 2) else {
        return;
    };
    let s = Scratch::new("xddcp-source-killed");
    random_file(&s.path("a"), 64 << 20);
    let (ns0, _) = c.host(0);
    let (ns1, a1) = c.host(1);
    let mut argv: Vec<String> = ["ip", "netns", "exec", &ns0, IOLAB, "xddcp"]
        .map(String::from)
        .to_vec();
    // A timeout far longer than the test waits: a copy that waits it out
    // is a hang, not a slow pass.
    argv.extend(words("-t 8 --timeout 300 --rsh"));
    argv.extend([
        "ip netns exec".into(),
        "--remote-iolab".into(),
        IOLAB.into(),
    ]);
    argv.push(s.path("a").display().to_string());
    argv.push(format!("{ns1}@{a1}:{}", s.path("b").display()));
    let cp = Bg::start_argv(&s.root, &argv, &[]);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let source = loop {
        if let Some(&p) = children_with(cp.pid(), "issource").first() {
            break p;
        }
        assert!(std::time::Instant::now() < until, "no source side started");
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    // SAFETY: kill has no memory effects; the pid is xddcp's child.
    unsafe { libc::kill(source as i32, libc::SIGKILL) };
    let e = cp.wait(120);
    let all = format!("stdout:\n{}\nstderr:\n{}", e.stdout, e.stderr);
    assert_eq!(e.code, Some(1), "{all}");
    assert!(
        e.stderr
            .contains("source side: killed by signal 9 (SIGKILL)"),
        "{all}"
    );
    assert!(e.stdout.contains("total: 0 of 1 files copied"), "{all}");
    assert!(
        !s.path("b").exists(),
        "the partial destination file is left"
    );
}

/// What a later xddcp removes of the private directories in TMPDIR: the
/// one whose owner is gone, and nothing else: not one without iolab's
/// owner file, not one whose owner holds its lock, not a link to a stale
/// one, not one others can enter.
#[test]
fn xddcp_removes_a_dead_runs_private_directory_and_nothing_else() {
    use std::os::unix::fs::PermissionsExt;
    let Some(c) = common::fake_cluster("xddcp_stale_tmp", 2) else {
        return;
    };
    let s = Scratch::new("xddcp-stale-tmp");
    let tmp = s.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let made = |name: &str, owner: Option<&str>, mode: u32| {
        let d = tmp.join(name);
        std::fs::create_dir(&d).unwrap();
        if let Some(text) = owner {
            std::fs::write(d.join(".iolab-owner"), text).unwrap();
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        d
    };
    let dead = "iolab pid 999999999 started 1\n";
    let stale = made("iolab-xddcp-Stale1", Some(dead), 0o700);
    let plain = made("iolab-xddcp-Plain1", None, 0o700);
    let open = made("iolab-xddcp-Open01", Some(dead), 0o755);
    let live = made("iolab-xddcp-Live01", Some("iolab pid 1 started 1\n"), 0o700);
    let held = std::fs::File::open(live.join(".iolab-owner")).unwrap();
    held.lock().unwrap();
    let target = made("elsewhere", Some(dead), 0o700);
    std::os::unix::fs::symlink(&target, tmp.join("iolab-xddcp-Link01")).unwrap();
    random_file(&s.path("a"), 100_000);
    let (ns1, a1) = c.host(1);
    let mut w: Vec<String> = words("-t 1 --timeout 30");
    w.extend(["--rsh".into(), "ip netns exec".into()]);
    w.extend(["--remote-iolab".into(), IOLAB.into()]);
    w.push(s.path("a").display().to_string());
    w.push(format!("{ns1}@{a1}:{}", s.path("b").display()));
    let (ns0, _) = c.host(0);
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", &ns0, IOLAB, "xddcp"])
        .args(&w)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(same(&s.path("a"), &s.path("b")));
    assert!(
        !stale.exists(),
        "the dead run's directory is removed: {err}"
    );
    assert!(
        err.contains(&format!(
            "removed {}: left by an xddcp run that was killed",
            stale.display()
        )),
        "{err}"
    );
    for kept in [&plain, &open, &live, &target] {
        assert!(kept.join(".").is_dir(), "{} was removed", kept.display());
    }
    assert!(
        target.join(".iolab-owner").is_file(),
        "the link was followed"
    );
    assert!(tmp.join("iolab-xddcp-Link01").symlink_metadata().is_ok());
    assert_eq!(err.matches("removed ").count(), 1, "{err}");
    drop(held);
    // The run's own directory went with it.
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 5, "{left:?}");
}

/// `--live` on xddcp: each file's source side sends its intervals to
/// xddcp, whose stream holds a `copy` phase summing, row by row, to the
/// bytes its results say each file moved (a rank per file), and the
/// source sides' private files are gone with the copy.
#[test]
fn xddcp_live_rows_sum_to_each_files_bytes() {
    let Some(c) = common::fake_cluster("xddcp_live", 2) else {
        return;
    };
    let s = Scratch::new("xddcp-live");
    std::fs::create_dir_all(s.path("src")).unwrap();
    std::fs::create_dir_all(s.path("dst")).unwrap();
    let sizes = [3 * 1_048_576 + 4321, 700_000];
    let mut list = String::new();
    for (i, n) in sizes.iter().enumerate() {
        let f = s.path(&format!("src/f{i}"));
        random_file(&f, *n);
        list += &format!("{}\n", f.display());
    }
    std::fs::write(s.path("list.txt"), list).unwrap();
    let (ns1, a1) = c.host(1);
    let mut w: Vec<String> = words("-F -t 2 --timeout 30 --live-interval 0.1");
    w.extend(["--rsh".into(), "ip netns exec".into()]);
    w.extend(["--remote-iolab".into(), IOLAB.into()]);
    w.extend(["--live".into(), s.path("live.jsonl").display().to_string()]);
    w.extend(["--json".into(), s.path("r.json").display().to_string()]);
    w.push(s.path("list.txt").display().to_string());
    w.push(format!("{ns1}@{a1}:{}", s.path("dst").display()));
    let o = xddcp_on(&c, &s.root, &w);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.path("r.json")).unwrap()).unwrap();
    // The line as given, the live options included.
    let line = doc["command_line"].as_str().unwrap();
    assert!(line.ends_with(&format!(" {}", w.join(" "))), "{line}");
    let text = std::fs::read_to_string(s.path("live.jsonl")).unwrap();
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    let header = lines.next().unwrap();
    assert_eq!(header["tool"], "xddcp");
    assert_eq!(header["run_id"], doc["run_id"]);
    let rows: Vec<serde_json::Value> = lines.collect();
    let (mut agg, mut per) = (0u64, [0u64; 2]);
    for r in &rows {
        assert_eq!(r["phase"], "copy", "{r}");
        let b = r["bytes"].as_u64().unwrap();
        match r["rank"].as_u64() {
            None => agg += b,
            Some(k) => per[k as usize - 1] += b,
        }
    }
    let files = doc["payload"]["files"].as_array().unwrap();
    let moved: Vec<u64> = files.iter().map(|f| f["bytes"].as_u64().unwrap()).collect();
    assert_eq!(moved, sizes.map(|n| n as u64).to_vec());
    assert_eq!(per.to_vec(), moved, "each file's rows");
    assert_eq!(
        agg,
        doc["payload"]["bytes"].as_u64().unwrap(),
        "the aggregate rows"
    );
    assert!(rows.iter().any(|r| r["last"] == true));
}

/// The source side samples at xddcp's `--live-interval`, not at its own
/// default second: a copy of a few hundred milliseconds or more gives
/// several rows for its rank, none more than a few intervals apart
/// (each second's operations landed in one 0.1 s row before).
#[test]
fn xddcp_source_sides_sample_at_xddcps_interval() {
    let Some(c) = common::fake_cluster("xddcp_liveint", 2) else {
        return;
    };
    let s = Scratch::new("xddcp-liveint");
    std::fs::create_dir_all(s.path("dst")).unwrap();
    let f = s.path("big");
    random_file(&f, 256 << 20);
    let (ns1, a1) = c.host(1);
    let mut w: Vec<String> = words("-t 1 --timeout 60 --live-interval 0.1");
    w.extend(["--rsh".into(), "ip netns exec".into()]);
    w.extend(["--remote-iolab".into(), IOLAB.into()]);
    w.extend(["--live".into(), s.path("live.jsonl").display().to_string()]);
    w.push(f.display().to_string());
    w.push(format!("{ns1}@{a1}:{}", s.path("dst/big").display()));
    let o = xddcp_on(&c, &s.root, &w);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(s.path("live.jsonl")).unwrap();
    let t: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["rank"] == 1 && r["bytes"].as_u64() > Some(0))
        .map(|r| r["t"].as_f64().unwrap())
        .collect();
    assert!(t.len() >= 2, "one row for the whole copy: {text}");
    for w in t.windows(2) {
        assert!(w[1] - w[0] < 0.6, "rows {} s apart: {text}", w[1] - w[0]);
    }
}

/// The names in `dir` that start with `prefix`, sorted.
fn named(dir: &Path, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// `iolab xddcp --rsh local -t 2 -p PORT ARGS...` started in `dir`.
fn xddcp_local_bg(dir: &Path, args: &[String]) -> Bg {
    let port = free_ports(2).to_string();
    let mut argv: Vec<String> = [IOLAB, "xddcp", "--rsh", "local", "-t", "2", "-p", &port]
        .map(String::from)
        .to_vec();
    argv.extend(args.iter().cloned());
    Bg::start_argv(dir, &argv, &[])
}

/// kill -9 of the destination side mid-copy (the destination process
/// itself, as the issue's `pgrep -f 'target ...'` finds it): nothing is
/// left at the destination's name. Without -a, xddcp removes the partial
/// copy (its own, by its name) and says so; with -a the partial copy and
/// its record stay for the resume, xddcp says what the record holds, and
/// the same command again finishes the copy byte-identical. The bytes
/// the killed side wrote are said to be unknown, not 0. Before, a 199 MB
/// file stayed at the final name, xddcp said "0 bytes" and nothing of
/// it, and a rerun refused "exists ... resume it with -restart" though
/// no record existed.
#[test]
fn kill_9_of_the_destination_side_leaves_nothing_that_looks_copied() {
    let s = Scratch::new("xddcp-dest-killed");
    let src = s.path("big");
    random_file(&src, 128 << 20);
    for (name, restart) in [("k", false), ("ka", true)] {
        let dst = s.path(name);
        let json = s.path(&format!("{name}.json"));
        let mut args: Vec<String> = vec!["--json".into(), json.display().to_string()];
        if restart {
            args.push("-a".into());
        }
        args.push(src.display().to_string());
        args.push(format!("127.0.0.1:{}", dst.display()));
        let cp = xddcp_local_bg(&s.root, &args);
        let partial = format!("{name}.partial");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let victim = loop {
            let dest_side = children_with(cp.pid(), "isdestination");
            let written = named(&s.root, &partial)
                .iter()
                .map(|n| std::fs::metadata(s.root.join(n)).map_or(0, |m| m.len()))
                .max()
                .unwrap_or(0);
            if let (Some(&p), true) = (dest_side.first(), written >= 8 << 20) {
                break p;
            }
            assert!(std::time::Instant::now() < until, "no data moved");
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        // SAFETY: kill has no memory effects; the pid is xddcp's child.
        unsafe { libc::kill(victim as i32, libc::SIGKILL) };
        let e = cp.wait(120);
        let all = format!("stdout:\n{}\nstderr:\n{}", e.stdout, e.stderr);
        assert_eq!(e.code, Some(1), "{all}");
        assert!(
            e.stderr
                .contains("destination side: killed by signal 9 (SIGKILL)"),
            "{all}"
        );
        assert!(!dst.exists(), "a partial copy at the final name: {all}");
        assert!(
            e.stdout
                .contains("(not counting what a killed destination side wrote"),
            "{all}"
        );
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let file = &doc["payload"]["files"][0];
        assert_eq!(file["bytes_known"], false, "{doc}");
        if restart {
            let record = std::fs::read_to_string(s.path("ka.restart")).unwrap();
            let offset: u64 = record
                .lines()
                .find_map(|l| l.strip_prefix("offset "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap();
            let said = format!(
                "left {} and its restart record {}, which records its first {offset} bytes as written; run the same command again (with -a)",
                s.path("ka.partial").display(),
                s.path("ka.restart").display()
            );
            assert!(e.stderr.contains(&said), "{all}");
            assert_eq!(file["left"]["recorded_bytes"], offset, "{doc}");
            assert!(s.path("ka.partial").is_file());
        } else {
            assert_eq!(named(&s.root, "k."), ["k.json"], "{all}");
            let removed = format!("removed {}.partial-", dst.display());
            assert!(e.stderr.contains(&removed), "{all}");
            assert_eq!(file["cleanup"]["removed"], true, "{doc}");
        }
        // The same command again: a new copy, or the resume, completes.
        let again = xddcp_local_bg(&s.root, &args).wait(120);
        assert_eq!(again.code, Some(0), "{}{}", again.stdout, again.stderr);
        assert!(same(&src, &dst), "{name} differs");
        assert!(named(&s.root, &partial).is_empty());
    }
}

/// Character devices, as XDD's xddcp takes them: a source with a size
/// (`/dev/zero`), refused without one or with direct I/O on the source;
/// a destination (`/dev/null`) written where it is, refused with -a
/// (nothing of it can be resumed) or -d (no direct I/O), and never with
/// advice to remove it. Before, every one was refused: "is not a
/// regular file", and "/dev/null exists ... remove it".
#[test]
fn character_devices_are_copied_as_xdds_xddcp_copies_them() {
    let s = Scratch::new("xddcp-char-devices");
    random_file(&s.path("src"), 1 << 20);
    let run = |args: &str| xddcp_local(&s.root, &words(args));
    let o = run(&format!(
        "/dev/zero 127.0.0.1:{} 1m",
        s.path("zeros").display()
    ));
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert_eq!(std::fs::read(s.path("zeros")).unwrap(), vec![0u8; 1 << 20]);
    for (args, why) in [
        (
            format!("/dev/zero 127.0.0.1:{}", s.path("z2").display()),
            "has no length: give the bytes to copy (size)",
        ),
        (
            format!("-s /dev/zero 127.0.0.1:{} 1m", s.path("z2").display()),
            "takes no direct I/O: drop -s",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args}: {}", common::stderr(&o));
        assert!(common::stderr(&o).contains(why), "{}", common::stderr(&o));
        assert!(!s.path("z2").exists());
    }
    let src = s.path("src").display().to_string();
    let o = run(&format!("{src} 127.0.0.1:/dev/null"));
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(common::stdout(&o).contains("total: 1 of 1 files copied, 1048576 bytes"));
    for (args, why) in [
        (
            format!("-a {src} 127.0.0.1:/dev/null"),
            "drop -restart (xddcp: -a)",
        ),
        (
            format!("-d {src} 127.0.0.1:/dev/null"),
            "drop -dio (xddcp: -d)",
        ),
    ] {
        let o = run(&args);
        let e = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args}: {e}");
        assert!(e.contains(why) && !e.contains("remove it"), "{args}: {e}");
    }
    use std::os::unix::fs::FileTypeExt;
    let null = std::fs::metadata("/dev/null").unwrap().file_type();
    assert!(null.is_char_device());
    assert!(named(Path::new("/dev"), "null.partial").is_empty());
    assert!(named(Path::new("/dev"), "null.restart").is_empty());
}

/// A block device destination holding a file system is refused by the
/// destination side before it listens (exit 2, the source never
/// started, the device untouched), pointing to xddcp's --force, which
/// then writes it; a block device as a source is copied whole.
#[test]
fn a_block_device_holding_a_file_system_is_written_only_with_force() {
    let dev = match common::loopfs::LoopDev::scratch("xddcp-blockdev", 16) {
        Ok(d) => d,
        Err(why) => return common::skip_or_fail("xddcp_blockdev", &why),
    };
    common::loopfs::mkfs(&dev, "ext4", &[]).unwrap();
    let s = Scratch::new("xddcp-blockdev-files");
    random_file(&s.path("src"), 4 << 20);
    let src = s.path("src").display().to_string();
    let head = |n: usize| std::fs::read(&dev.dev).unwrap()[..n].to_vec();
    let before = head(8 << 20);
    let o = xddcp_local(&s.root, &words(&format!("{src} 127.0.0.1:{dev}")));
    let e = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("refusing to write to this block device") && e.contains("--force"),
        "{e}"
    );
    assert!(!e.contains("source side"), "the source never ran: {e}");
    assert_eq!(head(8 << 20), before, "the device was written");
    let o = xddcp_local(&s.root, &words(&format!("--force {src} 127.0.0.1:{dev}")));
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert_eq!(head(4 << 20), std::fs::read(&src).unwrap());
    // The device as a source: its whole 16 MiB.
    let copy = s.path("devcopy");
    let o = xddcp_local(
        &s.root,
        &words(&format!("{dev} 127.0.0.1:{}", copy.display())),
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(common::stdout(&o).contains("total: 1 of 1 files copied, 16777216 bytes"));
    assert_eq!(std::fs::read(&copy).unwrap(), head(16 << 20));
}

/// A destination file system that fills mid-copy (-a, a 2 MiB tmpfs):
/// no `DESTINATION.restart.tmp` is left beside the record, and what
/// xddcp says agrees with it: the bytes the record holds, and the bytes
/// this run wrote (the total's), when they differ. Before, an empty
/// `.restart.tmp` stayed, and xddcp said "records its first 0 bytes as
/// written" beside a total of 1048576 bytes.
#[test]
fn a_full_destination_leaves_no_stray_record_and_its_figures_agree() {
    let s = Scratch::new("xddcp-full");
    let fs = common::SmallFs::new(&s, "small", "2m");
    if !fs.mounted {
        return;
    }
    random_file(&s.path("src"), 3_000_001);
    let dst = fs.path("full");
    let o = xddcp_local(
        &s.root,
        &words(&format!("-a {} 127.0.0.1:{dst}", s.path("src").display())),
    );
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert_eq!(
        named(&fs.dir, "full"),
        ["full.partial", "full.restart"],
        "{err}"
    );
    let record = std::fs::read_to_string(format!("{dst}.restart")).unwrap();
    let offset: u64 = record
        .lines()
        .find_map(|l| l.strip_prefix("offset "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    let written = total_bytes(&out);
    assert!(
        err.contains(&format!(
            "which records its first {offset} bytes as written"
        )),
        "{err}"
    );
    if written != offset {
        assert!(
            err.contains(&format!("this run wrote {written} bytes before it stopped")),
            "{err}"
        );
    }
}

/// An IPv6 destination is shown as `[::1]:/path` (it was `::1:/path`).
#[test]
fn an_ipv6_destination_is_shown_in_brackets() {
    let v6 = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
    if !v6
        .lines()
        .any(|l| l.starts_with("00000000000000000000000000000001"))
    {
        return common::skip_or_fail("xddcp_ipv6", "no IPv6 loopback (::1)");
    }
    let s = Scratch::new("xddcp-ipv6");
    random_file(&s.path("src"), 100_000);
    let dst = s.path("d6").display().to_string();
    let o = xddcp_local(
        &s.root,
        &words(&format!("{} [::1]:{dst}", s.path("src").display())),
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains(&format!(" -> [::1]:{dst}  ")),
        "{}",
        common::stdout(&o)
    );
    assert!(same(&s.path("src"), Path::new(&dst)));
}
