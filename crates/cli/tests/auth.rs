//! Connections iolab starts both ends of are proven with a one-time key
//! (issue 22), and the processes it starts end with it (issue 17 item 5).
//! Fake hosts are network namespaces (iolab_testkit); the remote shells
//! are scripts that behave as ssh does (join the words, hand the string
//! to `sh -c` on the far side, carry standard input), one of them holding
//! back the destination's report that it listens, so that a stranger can
//! connect first, every time.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::e2e::{random_file, same, Bg};
use common::Scratch;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// An ssh-like remote shell at `path`: the host is a namespace; the
/// words are joined and run by `sh -c` there, with standard input
/// carried. With `gate`, the far side's standard error (where the
/// destination says it listens) is held back until the file `gate`
/// exists, as a slow ssh would; the far side itself starts at once.
fn fake_ssh(path: &Path, gate: Option<&Path>) {
    let body = match gate {
        None => "#!/bin/sh\nh=$1; shift\nexec ip netns exec \"$h\" sh -c \"$*\"\n".to_string(),
        Some(g) => format!(
            "#!/bin/bash\nh=$1; shift\nip netns exec \"$h\" sh -c \"$*\" 2> >(n=0; while [ ! -e {g} ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done; exec cat >&2)\nrc=$?\nwait\nexit $rc\n",
            g = g.display()
        ),
    };
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every process's command line, as `ps` shows it to any user.
fn command_lines() -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(b) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let words = b
            .split(|c| *c == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        out.push((pid, words));
    }
    out
}

/// A word that looks like a key or token in hex (32 or more hex digits).
fn secret_like(w: &str) -> bool {
    let hex = w
        .split(['=', ' ', '\''])
        .any(|part| part.len() >= 32 && part.chars().all(|c| c.is_ascii_hexdigit()));
    hex
}

/// Fails when a command line holds `needle` or a hex secret.
fn assert_no_secret_in_command_lines(needle: Option<&str>) {
    // Only this build's processes: other checkouts' test runs on the same
    // machine (older iolab builds) are not what is under test.
    let ours = env!("CARGO_BIN_EXE_iolab");
    for (pid, words) in command_lines() {
        if !words.iter().any(|w| w.contains(ours)) {
            continue;
        }
        for w in &words {
            assert!(!secret_like(w), "pid {pid} shows a secret: {words:?}");
            if let Some(n) = needle {
                assert!(!w.contains(n), "pid {pid} shows the key: {words:?}");
            }
        }
    }
}

/// The destination's `iolab xdd` for `dest`, found as an attacker would
/// (by reading command lines).
fn destination_command(dest: &str) -> Option<Vec<String>> {
    command_lines().into_iter().map(|(_, w)| w).find(|w| {
        w.first().is_some_and(|p| p.ends_with("iolab"))
            && w.get(1).is_some_and(|x| x == "xdd")
            && w.iter().any(|x| x == "isdestination")
            && w.iter().any(|x| x == dest)
    })
}

/// The source command a stranger makes of the destination's: read its
/// own file, no key.
fn stranger_command(dest_cmd: &[String], evil: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < dest_cmd.len() {
        let w = dest_cmd[i].as_str();
        match w {
            "write" if i > 0 && dest_cmd[i - 1] == "-op" => out.push("read".into()),
            "isdestination" => out.push("issource".into()),
            "noclobber" | "key" | "partial" if out.last().is_some_and(|l| l == "-e2e") => {
                out.pop();
                if w != "noclobber" {
                    i += 1;
                }
            }
            _ if i > 0 && dest_cmd[i - 1] == "-target" => out.push(evil.into()),
            _ => out.push(w.into()),
        }
        i += 1;
    }
    out
}

/// The race of issue 22, made deterministic: the destination's report
/// that it listens is held back until a stranger, who read its command
/// line, has connected with the matching source command and been
/// refused. The copy then completes byte-identical, exit 0, and no
/// process ever showed a key.
#[test]
fn a_stranger_that_connects_first_is_refused_and_the_copy_completes() {
    let Some(c) = common::fake_cluster("auth_race", 2) else {
        return;
    };
    let s = Scratch::new("auth-race");
    random_file(&s.path("src"), 16 << 20);
    random_file(&s.path("evil"), 16 << 20);
    let gate = s.path("gate");
    fake_ssh(&s.path("slowsh"), Some(&gate));
    let (ns0, _) = c.host(0);
    let (ns1, a1) = c.host(1);
    let dest = s.path("copy").display().to_string();
    let argv: Vec<String> = vec![
        "ip".into(),
        "netns".into(),
        "exec".into(),
        ns0.clone(),
        IOLAB.into(),
        "xddcp".into(),
        "-v".into(),
        "-t".into(),
        "2".into(),
        "--timeout".into(),
        "60".into(),
        "--rsh".into(),
        s.path("slowsh").display().to_string(),
        "--remote-iolab".into(),
        IOLAB.into(),
        s.path("src").display().to_string(),
        format!("{ns1}@{a1}:{dest}"),
    ];
    let xddcp = Bg::start_argv(&s.root, &argv, &[]);
    let until = Instant::now() + Duration::from_secs(30);
    let dest_cmd = loop {
        if let Some(w) = destination_command(&dest) {
            break w;
        }
        assert!(Instant::now() < until, "no destination process seen");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_no_secret_in_command_lines(None);
    let mut stranger = vec!["ip".into(), "netns".into(), "exec".into(), ns0];
    let evil = s.path("evil").display().to_string();
    stranger.extend(stranger_command(&dest_cmd, &evil));
    let st = Bg::start_argv(&s.root, &stranger, &[]).wait(60);
    assert_eq!(
        st.code,
        Some(2),
        "the stranger was not refused: {}{}",
        st.stdout,
        st.stderr
    );
    assert!(st.stderr.contains("authentication"), "{}", st.stderr);
    std::fs::write(&gate, b"").unwrap();
    let end = xddcp.wait(120);
    assert_eq!(end.code, Some(0), "{}{}", end.stdout, end.stderr);
    assert!(same(&s.path("src"), &s.path("copy")), "the copy differs");
    assert!(
        end.stderr.contains("the destination refused a connection"),
        "{}",
        end.stderr
    );
    let log = std::fs::read_to_string(s.path("xddcp.src.destination.log")).unwrap();
    let src_log = std::fs::read_to_string(s.path("xddcp.src.source.log")).unwrap_or_default();
    assert!(
        log.contains("dropped a connection"),
        "dest log: {log}\nsource log: {src_log}\n{}",
        end.stdout
    );
}

/// A user's key file takes the one-time key's place; it is read by
/// xddcp and handed over on standard input, so neither its name's
/// contents nor any hex secret is on a command line while the copy runs.
#[test]
fn xddcp_with_a_key_file_shows_no_key_on_any_command_line() {
    let Some(c) = common::fake_cluster("auth_keyfile", 2) else {
        return;
    };
    let s = Scratch::new("auth-keyfile");
    random_file(&s.path("src"), 64 << 20);
    std::fs::write(s.path("key"), "sesame-0123456789-abcdefgh\n").unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(
        s.path("key"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    fake_ssh(&s.path("sshlike"), None);
    let (ns0, _) = c.host(0);
    let (ns1, a1) = c.host(1);
    let argv: Vec<String> = vec![
        "ip".into(),
        "netns".into(),
        "exec".into(),
        ns0,
        IOLAB.into(),
        "xddcp".into(),
        "-t".into(),
        "2".into(),
        "--key".into(),
        s.path("key").display().to_string(),
        "--rsh".into(),
        s.path("sshlike").display().to_string(),
        "--remote-iolab".into(),
        IOLAB.into(),
        s.path("src").display().to_string(),
        format!("{ns1}@{a1}:{}", s.path("copy").display()),
    ];
    let mut xddcp = Bg::start_argv(&s.root, &argv, &[]);
    let until = Instant::now() + Duration::from_secs(120);
    let mut scans = 0;
    while !xddcp.exited() && Instant::now() < until {
        assert_no_secret_in_command_lines(Some("sesame"));
        scans += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    let end = xddcp.wait(10);
    assert_eq!(end.code, Some(0), "{}{}", end.stdout, end.stderr);
    assert!(scans > 0);
    assert!(same(&s.path("src"), &s.path("copy")), "the copy differs");
}

/// Processes whose command line names `needle`.
fn running_with(needle: &str) -> Vec<u32> {
    command_lines()
        .into_iter()
        .filter(|(_, w)| w.iter().any(|x| x.contains(needle)) && w.iter().any(|x| x == "xdd"))
        .map(|(p, _)| p)
        .collect()
}

/// kill -9 of xddcp mid-copy: the local source (PR_SET_PDEATHSIG) and
/// the far side (its standard input closes with the ssh-like shell)
/// both end; a second writer on the destination meanwhile is refused
/// naming the holder; `-a` run again, with another spelling of the
/// source's path, finishes the copy byte-identical.
#[test]
fn kill_9_of_xddcp_leaves_nothing_running_and_a_resume_finishes() {
    let Some(c) = common::fake_cluster("auth_kill9", 2) else {
        return;
    };
    let s = Scratch::new("auth-kill9");
    let total: usize = 256 << 20;
    let data: Vec<u8> = (0..total / 8)
        .flat_map(|i| ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x77).to_le_bytes())
        .collect();
    std::fs::write(s.path("big"), &data).unwrap();
    drop(data);
    fake_ssh(&s.path("sshlike"), None);
    let (ns0, _) = c.host(0);
    let (ns1, a1) = c.host(1);
    let dest = s.path("copy").display().to_string();
    let argv = |source: &str| -> Vec<String> {
        vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            ns0.clone(),
            IOLAB.into(),
            "xddcp".into(),
            "-a".into(),
            "-t".into(),
            "2".into(),
            "--rsh".into(),
            s.path("sshlike").display().to_string(),
            "--remote-iolab".into(),
            IOLAB.into(),
            source.into(),
            format!("{ns1}@{a1}:{dest}"),
        ]
    };
    // xddcp's private temporary directory outlives a kill -9: keep it
    // in the scratch directory, which the test removes.
    let root = s.root.display().to_string();
    let tmpdir = [("TMPDIR", root.as_str())];
    let first = Bg::start_argv(&s.root, &argv("big"), &tmpdir);
    let until = Instant::now() + Duration::from_secs(60);
    // The copy is built under its partial name until complete.
    while std::fs::metadata(s.path("copy.partial")).map_or(0, |m| m.len()) < 16 << 20 {
        assert!(Instant::now() < until, "no data moved");
        std::thread::sleep(Duration::from_millis(2));
    }
    // A second writer while the first holds the file (the same copy
    // resumed, as `xddcp -a` starts it): refused, naming it.
    let second = Bg::start(
        &s.root,
        &common::e2e::words(&format!(
            "xdd -op write -target {dest} -bytes 1m -reqsize 1024 -blocksize 1024 -e2e isdestination -e2e destination 127.0.0.1:1,1 -e2e timeout 5 -e2e noclobber -restart enable"
        )),
        &[],
    )
    .wait(60);
    let writers = running_with(&dest);
    // SAFETY: kill has no memory effects; the pid is our child's.
    unsafe { libc::kill(first.pid() as i32, libc::SIGKILL) };
    let _ = first.wait(10);
    let until = Instant::now() + Duration::from_secs(30);
    while !running_with(&dest).is_empty() || !running_with("/big").is_empty() {
        assert!(
            Instant::now() < until,
            "copy processes outlived xddcp: {:?}",
            running_with(&dest)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!writers.is_empty());
    // Nothing at the destination's name looks like a finished copy: the
    // partial one goes by a name that says so, beside its record.
    assert!(!s.path("copy").exists(), "a partial copy at {dest}");
    assert!(s.path("copy.partial").is_file() && s.path("copy.restart").is_file());
    assert_eq!(second.code, Some(2), "{}{}", second.stdout, second.stderr);
    assert!(
        second.stderr.contains("locked by") && second.stderr.contains(&dest),
        "{}",
        second.stderr
    );
    // The killed xddcp's private directory is left; the next run in the
    // same TMPDIR removes it (its owner is gone) and says so.
    let privates = || -> Vec<String> {
        std::fs::read_dir(&s.root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("iolab-xddcp-"))
            .collect()
    };
    let left = privates();
    assert_eq!(left.len(), 1, "{left:?}");
    let big = s.path("big").display().to_string();
    let again = Bg::start_argv(&s.root, &argv(&format!("./{}", "big")), &tmpdir).wait(120);
    assert_eq!(again.code, Some(0), "{}{}", again.stdout, again.stderr);
    assert!(privates().is_empty(), "{:?}", privates());
    assert!(
        again.stderr.contains(&format!(
            "removed {}/{}: left by an xddcp run that was killed",
            root, left[0]
        )),
        "{}",
        again.stderr
    );
    assert!(same(&s.path("big"), &s.path("copy")), "the copy differs");
    // The same copy named by its absolute path: already complete.
    let third = Bg::start_argv(&s.root, &argv(&big), &[]).wait(120);
    assert_eq!(third.code, Some(0), "{}{}", third.stdout, third.stderr);
    assert!(third.stdout.contains(" 0 bytes"), "{}", third.stdout);
}

/// Opens an lst data connection to `addr` as an agent without the
/// session's key would; returns why it was refused (panics if accepted).
fn stranger_data_connection(addr: &str) -> String {
    use iolab_net::{conn, handshake, Cancel};
    let words: Vec<String> = ["ping"].map(String::from).to_vec();
    let hello = iolab_lst::proto::Hello::Data {
        token: "0".repeat(32),
        test: iolab_lst::spec::Test::parse(&words).unwrap(),
    };
    let hello = serde_json::to_value(hello).unwrap();
    let mut c = conn::connect(addr, Duration::from_secs(10), Cancel::process()).unwrap();
    c.idle_timeout = Duration::from_secs(10);
    match handshake::client(&mut c, "lst", &hello, None, Cancel::process()) {
        Ok(_) => panic!("the agent accepted a data connection without the key"),
        Err(e) => e.to_string(),
    }
}

/// Processes of `iolab lst agent --session`.
fn session_agents() -> Vec<u32> {
    command_lines()
        .into_iter()
        .filter(|(_, w)| w.iter().any(|x| x == "agent") && w.iter().any(|x| x == "--session"))
        .filter(|(_, w)| w.first().is_some_and(|p| p.ends_with("iolab")))
        .map(|(p, _)| p)
        .collect()
}

/// `iolab lst run` started through an ssh-like remote shell: the
/// session's key and token go on the agents' standard input, so no
/// command line shows them; an agent the console started refuses a
/// console without the session's key even on its known port; when the
/// session ends the agents end.
#[test]
fn lst_agents_take_the_session_key_on_stdin_and_refuse_a_console_without_it() {
    let Some(c) = common::fake_cluster("auth_lst", 3) else {
        return;
    };
    let s = Scratch::new("auth-lst");
    fake_ssh(&s.path("sshlike"), None);
    let (ns0, _) = c.host(0);
    let (ns1, a1) = c.host(1);
    let (ns2, a2) = c.host(2);
    let lst = |args: &[String]| -> Vec<String> {
        let mut v: Vec<String> = ["ip", "netns", "exec", &ns0, IOLAB, "lst", "run", "ping"]
            .map(String::from)
            .to_vec();
        v.extend(args.iter().cloned());
        v
    };
    let main = Bg::start_argv(
        &s.root,
        &lst(&[
            "--from".into(),
            format!("{ns1}@{a1}"),
            "--to".into(),
            format!("{ns2}@{a2}"),
            "--duration".into(),
            "6".into(),
            "--rsh".into(),
            s.path("sshlike").display().to_string(),
        ]),
        &[],
    );
    let until = Instant::now() + Duration::from_secs(30);
    while session_agents().len() < 2 {
        assert!(Instant::now() < until, "the agents did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Whether or not the console's session is open yet, the agents hold
    // the key: the stranger is refused either way.
    assert_no_secret_in_command_lines(None);
    let port = iolab_lst::console::DEFAULT_PORT;
    let stranger = Bg::start_argv(
        &s.root,
        &lst(&[
            "--from".into(),
            format!("{a1}:{port}"),
            "--to".into(),
            format!("{a2}:{port}"),
            "--count".into(),
            "5".into(),
        ]),
        &[("IOLAB_KEY_FILE", "")],
    )
    .wait(60);
    assert_ne!(stranger.code, Some(0), "{}", stranger.stdout);
    let said = format!("{}{}", stranger.stdout, stranger.stderr);
    assert!(said.contains("key"), "{said}");
    // A stranger agent opening a data connection to the server agent,
    // from a host of the cluster: refused in the handshake.
    let server = format!("{a2}:{port}");
    let refused = c.in_host(0, || stranger_data_connection(&server)).unwrap();
    assert!(refused.contains("key"), "{refused}");
    let end = main.wait(60);
    assert_eq!(end.code, Some(0), "{}{}", end.stdout, end.stderr);
    let until = Instant::now() + Duration::from_secs(30);
    while !session_agents().is_empty() {
        assert!(Instant::now() < until, "agents outlived their session");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `date -d +N min +%F@%R`: the kit's date in a default result name.
fn minute(plus: u32) -> String {
    let o = std::process::Command::new("date")
        .args(["-d", &format!("+{plus} min"), "+%F@%R"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A survey's name, arguments and kit variables.
type Survey<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, &'a str)>);

/// Links planted at every default result name of the mds and obdfilter
/// surveys for the coming minutes (in a world-writable sticky directory,
/// as /tmp), all pointing at a file of root's: each survey writes next to
/// them, says where, and the file pointed to is unchanged. (The disk and
/// OST surveys name their results through the same code.)
#[test]
fn a_survey_never_writes_through_a_link_planted_at_its_default_names() {
    let s = Scratch::new("auth-links");
    let shared = s.path("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::create_dir_all(s.path("mdt")).unwrap();
    let victim = s.path("victim");
    std::fs::write(&victim, b"root's own file\n").unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let mdt = s.path("mdt").display().to_string();
    let surveys: [Survey; 2] = [
        (
            "mds",
            vec![mdt.as_str()],
            vec![
                ("thrlo", "1"),
                ("thrhi", "1"),
                ("file_count", "20"),
                ("dir_count", "1"),
            ],
        ),
        (
            "obdfilter",
            vec![mdt.as_str(), "--rszlo", "256", "--rszhi", "256"],
            vec![("size", "1"), ("nobjhi", "1"), ("thrhi", "1")],
        ),
    ];
    for (survey, args, env) in surveys {
        for m in 0..3 {
            for ext in ["summary", "detail"] {
                let name = format!("{survey}_survey_{}_{host}.{ext}", minute(m));
                std::os::unix::fs::symlink(&victim, shared.join(name)).unwrap();
            }
        }
        let o = std::process::Command::new(IOLAB)
            .args(["survey", survey])
            .args(&args)
            .arg("--rslt-loc")
            .arg(&shared)
            .env_remove("rslt")
            .env_remove("rslt_loc")
            .envs(env)
            .output()
            .unwrap();
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{survey}: {err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"root's own file\n");
        assert!(
            err.contains("already there") && err.contains("-2.summary"),
            "{err}"
        );
        let written: Vec<_> = std::fs::read_dir(&shared)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(survey))
            .collect();
        assert_eq!(written.len(), 2, "{written:?}");
        assert!(written.iter().all(|n| n.contains("-2.")), "{written:?}");
    }
    // A prefix the user names is truncated as the kit does, but a link
    // there is refused (exit 2, naming it), not written through.
    let link = s.path("mine.summary");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let o = std::process::Command::new(IOLAB)
        .args(["survey", "mds"])
        .arg(s.path("mdt"))
        .arg("--rslt")
        .arg(s.path("mine"))
        .envs([
            ("thrlo", "1"),
            ("thrhi", "1"),
            ("file_count", "20"),
            ("dir_count", "1"),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("mine.summary"),
        "{}",
        common::stderr(&o)
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"root's own file\n");
}

/// `iolab stats start` works in TMP/iolab-stats/NODE, a name anyone can
/// predict in a shared TMP: a link planted at TMP/iolab-stats, or a
/// directory there that others may write in, is refused naming it, and
/// the directory the link points to is untouched.
#[test]
fn stats_never_works_through_a_link_planted_in_its_tmp() {
    let s = Scratch::new("auth-stats");
    let shared = s.path("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = s.path("victim");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    std::fs::create_dir_all(victim.join(&host)).unwrap();
    std::fs::write(victim.join(&host).join("keep"), b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, shared.join("iolab-stats")).unwrap();
    let cfg = s.path("c.toml");
    let text = format!("tmp = \"{}\"\ncpu_interval = 0\n", shared.display());
    std::fs::write(&cfg, text).unwrap();
    let start = |_: ()| {
        std::process::Command::new(IOLAB)
            .args(["stats", "start"])
            .arg(&cfg)
            .output()
            .unwrap()
    };
    let o = start(());
    assert_ne!(o.status.code(), Some(0), "{}", common::stdout(&o));
    let err = common::stderr(&o);
    assert!(err.contains("iolab-stats") && err.contains("link"), "{err}");
    assert_eq!(
        std::fs::read(victim.join(&host).join("keep")).unwrap(),
        b"precious"
    );
    assert_eq!(std::fs::read_dir(victim.join(&host)).unwrap().count(), 1);
    // A directory there that others may write in: refused too.
    std::fs::remove_file(shared.join("iolab-stats")).unwrap();
    std::fs::create_dir(shared.join("iolab-stats")).unwrap();
    std::fs::set_permissions(
        shared.join("iolab-stats"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let o = start(());
    assert_ne!(o.status.code(), Some(0), "{}", common::stdout(&o));
    assert!(
        common::stderr(&o).contains("writable by others"),
        "{}",
        common::stderr(&o)
    );
}

/// kill -9 of xddcp without `-a`: the far side sees its standard input
/// close, stops as on Ctrl-C and removes the partial file it created, so
/// nothing at the destination's name looks like a finished copy.
#[test]
fn kill_9_of_xddcp_without_a_leaves_no_partial_destination_file() {
    let Some(c) = common::fake_cluster("auth_kill9_noa", 2) else {
        return;
    };
    let s = Scratch::new("auth-kill9-noa");
    random_file(&s.path("src"), 192 << 20);
    fake_ssh(&s.path("sshlike"), None);
    let (ns0, _) = c.host(0);
    let (ns1, a1) = c.host(1);
    let dest = s.path("copy").display().to_string();
    let argv: Vec<String> = vec![
        "ip".into(),
        "netns".into(),
        "exec".into(),
        ns0,
        IOLAB.into(),
        "xddcp".into(),
        "-t".into(),
        "2".into(),
        "--rsh".into(),
        s.path("sshlike").display().to_string(),
        "--remote-iolab".into(),
        IOLAB.into(),
        s.path("src").display().to_string(),
        format!("{ns1}@{a1}:{dest}"),
    ];
    // xddcp's private temporary directory outlives a kill -9: keep it
    // in the scratch directory, which the test removes.
    let root = s.root.display().to_string();
    let first = Bg::start_argv(&s.root, &argv, &[("TMPDIR", root.as_str())]);
    let until = Instant::now() + Duration::from_secs(60);
    // The copy is built under a name of this run's (copy.partial-XXXXXXXX).
    let partials = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&s.root)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("copy.partial-"))
            .map(|e| e.path())
            .collect()
    };
    while partials()
        .iter()
        .all(|p| std::fs::metadata(p).map_or(0, |m| m.len()) < 8 << 20)
    {
        assert!(Instant::now() < until, "no data moved");
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: kill has no memory effects; the pid is our child's.
    unsafe { libc::kill(first.pid() as i32, libc::SIGKILL) };
    let _ = first.wait(10);
    let until = Instant::now() + Duration::from_secs(30);
    while !running_with(&dest).is_empty() {
        assert!(Instant::now() < until, "the destination outlived xddcp");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !s.path("copy").exists(),
        "a partial copy was left at {dest}"
    );
    assert!(partials().is_empty(), "{:?}", partials());
}

/// A man in the middle: listens on 127.0.0.1:`port` here (where the
/// source connects) and relays each connection to the same address
/// inside host 0 of `c` (where the destination listens, on the
/// namespace's own loopback), so both sides give the same destination
/// list. It passes the handshake through and rewrites the payload of
/// the first data frame from the source, fixing its CRC-32C as anyone
/// who knows the format can (bytes 12..16 of the header, over the
/// header and the payload); a tag after the payload, when its header
/// says there is one, is passed on as it came. Returns how many frames
/// it rewrote, once `stop` is set and its connections are over.
fn tampering_relay(
    c: &iolab_testkit::FakeCluster,
    port: u16,
    stop: &std::sync::atomic::AtomicBool,
) -> usize {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::Ordering::Relaxed;
    let front = TcpListener::bind(("127.0.0.1", port)).unwrap();
    front.set_nonblocking(true).unwrap();
    let rewritten = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        while !stop.load(Relaxed) {
            let Ok((client, _)) = front.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            client.set_nonblocking(false).unwrap();
            let Ok(Ok(server)) = c.in_host(0, || TcpStream::connect(("127.0.0.1", port))) else {
                continue;
            };
            let (mut down_from, mut down_to) =
                (server.try_clone().unwrap(), client.try_clone().unwrap());
            s.spawn(move || {
                let _ = std::io::copy(&mut down_from, &mut down_to);
                let _ = down_to.shutdown(Shutdown::Write);
            });
            let rewritten = &rewritten;
            s.spawn(move || {
                let (mut from, mut to) = (client, server);
                let mut head = [0u8; 32];
                while from.read_exact(&mut head).is_ok() {
                    let len = u32::from_le_bytes(head[8..12].try_into().unwrap()) as usize;
                    let tag = if head[6] & 2 == 2 { 32 } else { 0 };
                    let mut body = vec![0u8; len + tag];
                    if from.read_exact(&mut body).is_err() {
                        break;
                    }
                    if head[4] == 2 && len > 0 && rewritten.load(Relaxed) == 0 {
                        body[..5].copy_from_slice(b"EVIL!");
                        head[12..16].fill(0);
                        let crc = crc32c_of(&head, &body[..len], head[6] & 1 == 1);
                        head[12..16].copy_from_slice(&crc.to_le_bytes());
                        rewritten.fetch_add(1, Relaxed);
                    }
                    if to.write_all(&head).is_err() || to.write_all(&body).is_err() {
                        break;
                    }
                }
                let _ = to.shutdown(Shutdown::Write);
            });
        }
    });
    rewritten.load(Relaxed)
}

/// CRC-32C (Castagnoli, reflected, as the frames carry it) of `head`
/// and, unless `head_only`, `body`: the relay's, written out so that it
/// borrows nothing from iolab.
fn crc32c_of(head: &[u8], body: &[u8], head_only: bool) -> u32 {
    let bytes = head.iter().chain(if head_only { &[][..] } else { body });
    let mut crc = !0u32;
    for b in bytes {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0x82F6_3B78 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// Runs `copy` (it starts both sides and returns both endings) with a
/// tampering relay in the middle; returns its result and the frames the
/// relay rewrote.
fn through_relay<T: Send>(
    c: &iolab_testkit::FakeCluster,
    port: u16,
    copy: impl FnOnce() -> T + Send,
) -> (T, usize) {
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let relay = s.spawn(|| tampering_relay(c, port, &stop));
        let out = copy();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (out, relay.join().unwrap())
    })
}

/// A relay that rewrites a data frame and fixes its CRC got through a
/// keyed copy (both sides exit 0, the destination started with the
/// relay's bytes): the key proved only the handshake. Now every frame
/// after it carries a tag under keys derived from that handshake, so
/// the rewritten frame is refused: both sides exit 1 naming the
/// authentication tag, and no destination file is left. Without a key
/// the same relay's bytes still arrive (the unauthenticated copy XDD
/// has, as docs/e2e.md says), which shows the relay really rewrites.
#[test]
fn a_relay_that_rewrites_a_keyed_copy_fails_both_sides_and_leaves_no_copy() {
    let Some(c) = common::fake_cluster("auth_relay", 1) else {
        return;
    };
    let s = Scratch::new("auth-relay");
    random_file(&s.path("src"), 8 << 20);
    std::fs::write(s.path("key"), "relay-test-key-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(s.path("key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let (ns0, _) = c.host(0);
    let side = |op: &str, target: &str, role: &str, keyed: bool, port: u16| -> Vec<String> {
        let mut w = vec![IOLAB.to_string(), "xdd".into()];
        let line = format!(
            "-op {op} -target {target} -reqsize 1024 -mbytes 8 -qd 1 -e2e {role} \
             -e2e destination 127.0.0.1:{port} -e2e timeout 30"
        );
        w.extend(line.split_whitespace().map(String::from));
        if keyed {
            w.extend([
                "-e2e".into(),
                "key".into(),
                s.path("key").display().to_string(),
            ]);
        }
        w
    };
    let src_path = s.path("src").display().to_string();
    let copy = |keyed: bool, dest: &str, port: u16| {
        let mut d = vec!["ip".into(), "netns".into(), "exec".into(), ns0.clone()];
        d.extend(side("write", dest, "isdestination", keyed, port));
        let mut dst = Bg::start_argv(&s.root, &d, &[]);
        assert!(dst.wait_for("listening on"), "{}", dst.stderr_now());
        let src = side("read", &src_path, "issource", keyed, port);
        let src = Bg::start_argv(&s.root, &src, &[]);
        (src.wait(60), dst.wait(60))
    };
    // Without a key: the relay's bytes arrive, and nobody notices.
    let plain = s.path("plain").display().to_string();
    let port = common::e2e::free_ports(1);
    let ((src, dst), rewritten) = through_relay(&c, port, || copy(false, &plain, port));
    assert_eq!(rewritten, 1);
    assert_eq!(
        (src.code, dst.code),
        (Some(0), Some(0)),
        "{}{}",
        src.stderr,
        dst.stderr
    );
    assert!(std::fs::read(&plain).unwrap().starts_with(b"EVIL!"));
    // With a key: refused on both sides, nothing left.
    let says = |e: &str| e.contains("fails its authentication tag");
    let keyed = s.path("keyed").display().to_string();
    let port = common::e2e::free_ports(1);
    let ((src, dst), rewritten) = through_relay(&c, port, || copy(true, &keyed, port));
    assert_eq!(rewritten, 1, "the relay rewrote nothing");
    assert_eq!(dst.code, Some(1), "destination: {}", dst.stderr);
    assert!(says(&dst.stderr), "destination: {}", dst.stderr);
    assert!(
        dst.stderr.contains("nothing of it was written"),
        "{}",
        dst.stderr
    );
    assert_eq!(src.code, Some(1), "source: {}", src.stderr);
    assert!(says(&src.stderr), "source: {}", src.stderr);
    assert!(!Path::new(&keyed).exists(), "a destination file was left");
    // xddcp, whose one-time key proves both sides: the same.
    let port = common::e2e::free_ports(1);
    let dest = s.path("viaxddcp").display().to_string();
    let argv: Vec<String> = [
        IOLAB,
        "xddcp",
        "-t",
        "1",
        "-p",
        &port.to_string(),
        "--timeout",
        "30",
        "--rsh",
        c.rsh(),
        "--remote-iolab",
        IOLAB,
        &src_path,
        &format!("{ns0}@127.0.0.1:{dest}"),
    ]
    .map(String::from)
    .to_vec();
    let (end, rewritten) =
        through_relay(&c, port, || Bg::start_argv(&s.root, &argv, &[]).wait(120));
    assert_eq!(rewritten, 1, "the relay rewrote nothing: {}", end.stderr);
    assert_eq!(end.code, Some(1), "{}{}", end.stdout, end.stderr);
    let all = format!("{}{}", end.stdout, end.stderr);
    assert!(all.contains("0 of 1 files copied"), "{all}");
    // Both sides say it: the destination, and the source repeating it.
    let sides = all.split("side: ").skip(1);
    assert_eq!(sides.filter(|x| says(x)).count(), 2, "{all}");
    assert!(!Path::new(&dest).exists(), "xddcp left a destination file");
}
