//! `iolab xdd -endtoend` over loopback TCP: two real processes, a source
//! and a destination, copying a file on tmpfs (byte-identical, checked
//! with cmp) or the `null` target (the pattern verified on the
//! destination); every rule of guide 10.5 broken once (both sides exit
//! 2 with the same message, nothing written); a wrong key; a port in use;
//! a block damaged in transit; bad input for every new option.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use common::e2e::{free_ports, random_file, same, words, Bg, Ended};
use common::Scratch;
use serde_json::Value;
use std::path::Path;

/// Starts the destination (`iolab xdd LINE`) and waits until it listens.
fn destination(dir: &Path, line: &str, env: &[(&str, &str)]) -> Bg {
    let mut w = vec!["xdd".to_string()];
    w.extend(words(line));
    let mut d = Bg::start(dir, &w, env);
    assert!(
        d.wait_for("listening on"),
        "the destination did not listen: {}",
        d.stderr_now()
    );
    d
}

/// Runs the source (`iolab xdd LINE`) to its end.
fn source(dir: &Path, line: &str, env: &[(&str, &str)]) -> Ended {
    let mut w = vec!["xdd".to_string()];
    w.extend(words(line));
    Bg::start(dir, &w, env).wait(120)
}

fn json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// Random bytes from the kernel (no pattern a bug could fake).

#[test]
fn file_to_file_with_several_qthreads_and_dio_is_byte_identical() {
    // -dio with a short last request: 12288 bytes, a multiple of 512.
    let s = Scratch::new("e2e-file");
    // Not a whole number of requests: the last one is short.
    let bytes = 3 * 1024 * 1024 + 12_288;
    random_file(&s.path("src.dat"), bytes);
    let p = free_ports(3);
    let common = format!(
        "-reqsize 64 -bytes {bytes} -qd 3 -dio -e2e destination 127.0.0.1:{p} -e2e timeout 60"
    );
    let d = destination(
        &s.root,
        &format!("-op write -target dst.dat {common} -e2e isdestination --json d.json"),
        &[],
    );
    let src = source(
        &s.root,
        &format!(
            "-op read -target src.dat {common} -e2e issource -e2e sockbuf 4194304 --json s.json"
        ),
        &[],
    );
    let dst = d.wait(60);
    assert_eq!(src.code, Some(0), "source: {}", src.stderr);
    assert_eq!(dst.code, Some(0), "destination: {}", dst.stderr);
    assert!(same(&s.path("src.dat"), &s.path("dst.dat")));
    assert!(
        src.stdout.contains("End-to-end, source, destinations"),
        "{}",
        src.stdout
    );
    assert!(
        dst.stdout.contains("End-to-end, destination"),
        "{}",
        dst.stdout
    );
    // Each side's table ends with the percentage of time on the network.
    for out in [&src.stdout, &dst.stdout] {
        assert!(out.contains("E2E_Pct_S/R"), "{out}");
    }
    let sj = json(&s.path("s.json"));
    let dj = json(&s.path("d.json"));
    let (sc, dc) = (&sj["payload"]["combined"], &dj["payload"]["combined"]);
    assert_eq!(sc["read_bytes"].as_u64(), Some(bytes as u64));
    assert_eq!(dc["write_bytes"].as_u64(), Some(bytes as u64));
    assert_eq!(dc["e2e"]["frames"].as_u64(), Some(49));
    assert_eq!(dc["e2e"]["checksum_errors"].as_u64(), Some(0));
    let pct = dc["e2e"]["sr_percent"].as_f64().unwrap();
    assert!((0.0..=100.0).contains(&pct), "{pct}");
}

#[test]
fn null_to_null_passes_with_the_pattern_verified_on_the_destination() {
    let s = Scratch::new("e2e-null");
    let p = free_ports(2);
    let common = format!(
        "-target null -reqsize 32 -numreqs 40 -passes 3 -dp sequenced -e2e destination 127.0.0.1:{p},2"
    );
    let d = destination(
        &s.root,
        &format!("-op write {common} -e2e isdestination -verify location -verbose --json d.json -ts detailed -ts output dts"),
        &[],
    );
    let src = source(
        &s.root,
        &format!("-op read {common} -e2e issource -hb 1 -hb bw -hb lf -outputformat add +E2EIOTIME+E2ESRTIME+E2ELAGTIME+E2EPERCENTLAGTIME+E2EFIRSTREADTIME+E2ELASTWRITETIME"),
        &[],
    );
    let dst = d.wait(60);
    assert_eq!(src.code, Some(0), "source: {}", src.stderr);
    assert_eq!(dst.code, Some(0), "destination: {}", dst.stderr);
    for h in [
        "E2E_I/O",
        "E2E_S/R",
        "E2E_Lag",
        "E2E_Pct_Lag",
        "E2E_1st_Rd",
        "E2E_Lst_Wrt",
    ] {
        assert!(src.stdout.contains(h), "{h}: {}", src.stdout);
    }
    let dj = json(&s.path("d.json"));
    let passes = dj["payload"]["passes"].as_array().unwrap();
    assert_eq!(passes.len(), 3);
    let c = &dj["payload"]["combined"];
    assert_eq!(c["write_ops"].as_u64(), Some(120));
    assert_eq!(c["verify"]["failed_ops"].as_u64(), Some(0));
    assert_eq!(c["errors"].as_u64(), Some(0));
    // The time stamps of the destination were written.
    let ts = std::fs::read_to_string(s.path("dts.target.0000.csv")).unwrap();
    assert!(ts.lines().count() > 120, "{ts}");
}

/// The `null` source's unique data (the default pattern, and dedupe +
/// compress), whose frames are summed from their stamps alone: every
/// frame's checksum holds on the destination, which checks every byte
/// of every request against the pattern; a request size that is not
/// whole 4 KiB units (summed in full) too.
#[test]
fn null_to_null_unique_data_checksums_hold_on_every_frame() {
    let s = Scratch::new("e2e-unique");
    for (i, (dp, reqsize)) in [
        ("", 64),
        ("-dp dedupe 30 -dp compress 40", 4),
        ("-dp compress 10", 3),
    ]
    .into_iter()
    .enumerate()
    {
        let p = free_ports(2);
        let common = format!(
            "-target null -reqsize {reqsize} -numreqs 300 -passes 2 {dp} -e2e destination 127.0.0.1:{p},2"
        );
        let d = destination(
            &s.root,
            &format!("-op write {common} -e2e isdestination -verify contents --json d{i}.json"),
            &[],
        );
        let src = source(&s.root, &format!("-op read {common} -e2e issource"), &[]);
        let dst = d.wait(60);
        assert_eq!(src.code, Some(0), "{dp}: source: {}", src.stderr);
        assert_eq!(dst.code, Some(0), "{dp}: destination: {}", dst.stderr);
        let c = &json(&s.path(&format!("d{i}.json")))["payload"]["combined"];
        assert_eq!(c["write_ops"].as_u64(), Some(600), "{dp}");
        assert_eq!(c["e2e"]["frames"].as_u64(), Some(600), "{dp}");
        assert_eq!(c["e2e"]["checksum_errors"].as_u64(), Some(0), "{dp}");
        assert_eq!(c["verify"]["failed_ops"].as_u64(), Some(0), "{dp}");
    }
}

/// A `null` source's block damaged after its sum was taken (the debug
/// hook) is caught as a file source's is.
#[test]
fn a_generated_block_damaged_in_transit_is_caught() {
    damaged_in_transit("e2e-damage-null", "");
}

/// With a key the destination checks each frame's tag and takes its CRC
/// only when the tag fails: a block damaged on the wire (after its CRC
/// and tag were taken) is still told as a checksum error, counted, and
/// not written, not as a forgery.
#[test]
fn a_keyed_block_damaged_in_transit_is_a_checksum_error_not_a_forgery() {
    damaged_in_transit("e2e-damage-keyed", "-e2e key k");
}

/// Source QThread 0's third frame damaged on its way (`extra`: options
/// of both sides, a key file `k` made in the scratch directory).
fn damaged_in_transit(name: &str, extra: &str) {
    let s = Scratch::new(name);
    key_file(&s.path("k"), "a shared secret of some length\n");
    let p = free_ports(1);
    let common =
        format!("-target null -reqsize 64 -numreqs 20 -e2e destination 127.0.0.1:{p} {extra}");
    let d = destination(
        &s.root,
        &format!("-op write {common} -e2e isdestination --json d.json"),
        &[],
    );
    let src = source(
        &s.root,
        &format!("-op read {common} -e2e issource"),
        &[("IOLAB_E2E_DAMAGE", "3")],
    );
    let dst = d.wait(90);
    assert_eq!(dst.code, Some(1), "{}", dst.stderr);
    assert!(dst.stderr.contains("checksum mismatch"), "{}", dst.stderr);
    assert!(!dst.stderr.contains("authentication"), "{}", dst.stderr);
    assert_eq!(src.code, Some(1), "{}", src.stderr);
    let c = &json(&s.path("d.json"))["payload"]["combined"];
    assert_eq!(c["e2e"]["checksum_errors"].as_u64(), Some(1));
    assert_eq!(
        c["write_ops"].as_u64(),
        Some(2),
        "the 2 good blocks before it"
    );
}

/// A source and a destination that differ in one thing: both exit 2
/// with the same message, and the destination file is never created.
#[test]
fn every_rule_of_10_5_broken_once_stops_both_sides_with_one_message() {
    let s = Scratch::new("e2e-rules");
    random_file(&s.path("src.dat"), 1 << 20);
    // (source's -op and extras, destination's -op and extras, message)
    let cases = [
        ("-op write", "-op write", "the source must read"),
        ("-op read", "-op read", "the destination must write"),
        ("-op read -qd 2", "-op write", "same queue depth"),
        ("-op read -reqsize 8", "-op write", "same request size"),
        ("-op read -bytes 524288", "-op write", "same amount"),
        ("-op read -passes 2", "-op write", "same number of passes"),
    ];
    for (extra_s, extra_d, want) in cases {
        let p = free_ports(2);
        let dest = format!("-e2e destination 127.0.0.1:{p} -e2e timeout 20");
        let base = "-reqsize 16 -bytes 1048576";
        let d = destination(
            &s.root,
            &format!("-target dst.dat {base} {dest} -e2e isdestination {extra_d}"),
            &[],
        );
        let src = source(
            &s.root,
            &format!("-target src.dat {base} {dest} -e2e issource {extra_s}"),
            &[],
        );
        let dst = d.wait(90);
        assert_eq!(src.code, Some(2), "{want}: source {}", src.stderr);
        assert_eq!(dst.code, Some(2), "{want}: destination {}", dst.stderr);
        assert!(src.stderr.contains(want), "{want}: {}", src.stderr);
        let line = |e: &str| e.lines().find(|l| l.contains(want)).unwrap().to_string();
        assert_eq!(
            line(&src.stderr),
            line(&dst.stderr),
            "one message on both sides"
        );
        assert!(!s.path("dst.dat").exists(), "{want}: nothing written");
    }
    // The destination list: the same ports, written differently.
    let p = free_ports(2);
    let d = destination(
        &s.root,
        &format!("-op write -target dst.dat -reqsize 16 -bytes 1048576 -qd 2 -e2e isdestination -e2e destination 127.0.0.1:{p} -e2e timeout 20"),
        &[],
    );
    let src = source(
        &s.root,
        &format!("-op read -target src.dat -reqsize 16 -bytes 1048576 -e2e issource -e2e destination 127.0.0.1:{p},2"),
        &[],
    );
    let dst = d.wait(90);
    assert_eq!((src.code, dst.code), (Some(2), Some(2)), "{}", src.stderr);
    assert!(
        src.stderr.contains("same destination list"),
        "{}",
        src.stderr
    );
    assert!(!s.path("dst.dat").exists());
}

fn key_file(p: &Path, text: &str) {
    std::fs::write(p, text).unwrap();
    // A key file others may read is refused.
    std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
}

#[test]
fn a_wrong_or_missing_key_is_refused_and_nothing_is_written() {
    let s = Scratch::new("e2e-key");
    random_file(&s.path("src.dat"), 1 << 20);
    key_file(&s.path("k1"), "a shared secret of some length\n");
    key_file(&s.path("k2"), "another secret, also long enough\n");
    let base = "-reqsize 16 -bytes 1048576";
    for (src_key, env) in [
        (format!("-e2e key {}", s.path("k2").display()), vec![]),
        (String::new(), vec![]),
    ] {
        let p = free_ports(1);
        let dest = format!("-e2e destination 127.0.0.1:{p} -e2e timeout 3");
        let d = destination(
            &s.root,
            &format!("-op write -target dst.dat {base} {dest} -e2e isdestination -e2e key k1"),
            &env,
        );
        let src = source(
            &s.root,
            &format!("-op read -target src.dat {base} {dest} -e2e issource {src_key}"),
            &env,
        );
        let dst = d.wait(90);
        assert_eq!(src.code, Some(2), "{}", src.stderr);
        assert!(
            src.stderr.contains("authentication failed"),
            "{}",
            src.stderr
        );
        // The destination dropped that connection and kept waiting for
        // its source, which never came.
        assert_eq!(dst.code, Some(1), "{}", dst.stderr);
        assert!(
            dst.stderr.contains("dropped a connection"),
            "{}",
            dst.stderr
        );
        assert!(!s.path("dst.dat").exists());
    }
    // The same key on both sides (the destination's from IOLAB_KEY_FILE).
    let p = free_ports(1);
    let dest = format!("-e2e destination 127.0.0.1:{p}");
    let k1 = s.path("k1").display().to_string();
    let d = destination(
        &s.root,
        &format!("-op write -target dst.dat {base} {dest} -e2e isdestination"),
        &[("IOLAB_KEY_FILE", &k1)],
    );
    let src = source(
        &s.root,
        &format!("-op read -target src.dat {base} {dest} -e2e issource -e2e key k1"),
        &[],
    );
    let dst = d.wait(90);
    assert_eq!((src.code, dst.code), (Some(0), Some(0)), "{}", dst.stderr);
    assert!(same(&s.path("src.dat"), &s.path("dst.dat")));
}

#[test]
fn a_port_in_use_or_no_destination_is_named() {
    let s = Scratch::new("e2e-port");
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p = held.local_addr().unwrap().port();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words(&format!(
            "xdd -op write -target dst.dat -numreqs 4 -e2e isdestination -e2e destination 127.0.0.1:{p}"
        )))
        .current_dir(&s.root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains(&format!("127.0.0.1:{p}")));
    drop(held);
    // Nobody listens: the source retries for its timeout, then names
    // the host and port.
    let q = free_ports(1);
    let line = format!(
        "xdd -op read -target null -numreqs 4 -e2e issource -e2e destination 127.0.0.1:{q} -e2e timeout 1"
    );
    let o = common::iolab(&line.split_whitespace().collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains(&format!("127.0.0.1:{q}")));
    assert!(common::tree(&s.root).is_empty());
}

/// A block damaged after its checksum was computed (a debug-build hook
/// in the source) is caught: nothing of it is written, the destination
/// counts it and fails, the source fails too.
#[test]
fn a_block_damaged_in_transit_is_caught_and_counted() {
    let s = Scratch::new("e2e-damage");
    random_file(&s.path("src.dat"), 1 << 20);
    let p = free_ports(1);
    let common = format!("-reqsize 16 -bytes 1048576 -e2e destination 127.0.0.1:{p}");
    let d = destination(
        &s.root,
        &format!("-op write -target dst.dat {common} -e2e isdestination --json d.json"),
        &[],
    );
    let src = source(
        &s.root,
        &format!("-op read -target src.dat {common} -e2e issource"),
        &[("IOLAB_E2E_DAMAGE", "5")],
    );
    let dst = d.wait(90);
    assert_eq!(dst.code, Some(1), "{}", dst.stderr);
    assert!(dst.stderr.contains("checksum mismatch"), "{}", dst.stderr);
    assert_eq!(src.code, Some(1), "{}", src.stderr);
    let dj = json(&s.path("d.json"));
    let c = &dj["payload"]["combined"];
    assert_eq!(c["e2e"]["checksum_errors"].as_u64(), Some(1));
    assert_eq!(
        c["write_ops"].as_u64(),
        Some(4),
        "the 4 good blocks before it"
    );
    // The failed copy's file was made by this run: removed.
    assert!(!s.path("dst.dat").exists());
}

#[test]
fn bad_end_to_end_options_exit_2_and_create_nothing() {
    let s = Scratch::new("e2e-bad");
    let ok = "-op write -target f -numreqs 4";
    for (line, opt) in [
        (format!("{ok} -e2e"), "-endtoend"),
        (format!("{ok} -e2e bogus"), "-endtoend"),
        (format!("{ok} -e2e isdestination"), "-e2e destination"),
        (format!("{ok} -e2e destination h"), "issource"),
        (format!("{ok} -e2e issource isdestination destination h"), "not both"),
        (format!("{ok} -e2e isdestination destination h:0"), "-endtoend"),
        (format!("{ok} -e2e isdestination destination h:70000"), "-endtoend"),
        (format!("{ok} -e2e isdestination destination h:5,0"), "-endtoend"),
        (format!("{ok} -e2e isdestination destination h:65535,2"), "65535"),
        (format!("{ok} -e2e isdestination destination a:5,1 destination b"), "each its ports"),
        (format!("{ok} -e2e isdestination destination h port 0"), "-endtoend"),
        (format!("{ok} -e2e isdestination destination h portcount 0"), "-endtoend"),
        (format!("{ok} -e2e isdestination destination h key /no/such/key"), "key"),
        (format!("{ok} -e2e isdestination destination h timeout 0"), "-endtoend"),
        (format!("{ok} -e2e isdestination destination h sockbuf 10"), "-endtoend"),
        (format!("{ok} -e2e issource destination h noclobber"), "noclobber"),
        (format!("{ok} -e2e isdestination destination h partial f.part"), "add -e2e noclobber"),
        (format!("{ok} -e2e isdestination destination h noclobber partial d/f.part"), "in the directory of f"),
        (format!("{ok} -e2e isdestination destination h noclobber partial f"), "give another name"),
        (format!("{ok} -e2e isdestination destination h noclobber -deletefile"), "drop -createnewfiles"),
        (format!("{ok} -e2e isdestination destination h -engine uring"), "-engine"),
        (format!("{ok} -e2e isdestination destination h -seek random"), "-seek"),
        (format!("{ok} -e2e isdestination destination h -rwratio 50"), "-rwratio"),
        ("-op write -target f -timelimit 1 -e2e isdestination destination h".into(), "amount"),
        (format!("{ok} -restart enable"), "-restart"),
        (format!("{ok} -restart bogus -e2e isdestination destination h"), "-restart"),
        (format!("{ok} -restart frequency 0 -e2e isdestination destination h"), "-restart"),
        (format!("{ok} -restart offset x -e2e isdestination destination h"), "-restart"),
        (format!("{ok} -restart offset 99999999 -e2e isdestination destination h"), "past the end"),
        (format!("{ok} -passes 2 -passoffset 8 -restart enable -e2e isdestination destination h"), "drop -passoffset or -restart"),
        (format!("{ok} -e2e target 0 isdestination destination h -targets 2 f g -e2e target 1 isdestination destination h"), "also used by target 0"),
        (format!("{ok} -outputformat add +E2EBOGUS"), "-outputformat"),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
            .arg("xdd")
            .args(line.split_whitespace())
            .current_dir(&s.root)
            .output()
            .unwrap();
        let e = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{line}: {e}");
        assert!(e.contains(opt), "{line}: {e}");
    }
    // A destination file that cannot be made (its directory missing) is
    // refused before a port is bound, so no source ever sends to it
    // (it used to listen, take the data, then fail to open: exit 1).
    let p = common::e2e::free_ports(1);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("xdd")
        .args(words(&format!(
            "-op write -target nodir/f -numreqs 4 -e2e isdestination destination 127.0.0.1:{p} timeout 5"
        )))
        .current_dir(&s.root)
        .output()
        .unwrap();
    let e = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("destination nodir/f: its directory nodir does not exist"),
        "{e}"
    );
    assert!(!e.contains("listening"), "{e}");
    assert!(common::tree(&s.root).is_empty());
}

/// Strangers on every destination port before the source comes: one
/// that says nothing and one that trickles a handshake a byte a second
/// per port. The destination serves the source meanwhile (the copy
/// completes, byte-identical, counted exactly) and holds no stranger
/// past its setup or the handshake's bound.
#[test]
fn strangers_on_every_destination_port_neither_stall_nor_fail_the_copy() {
    use common::strangers::{wait_closed, Stranger};
    let s = Scratch::new("e2e-strangers");
    let bytes = 2 * 1024 * 1024;
    random_file(&s.path("src.dat"), bytes);
    let p = free_ports(3);
    // Every wait of the copy is bounded by 15 s: far more than the copy
    // takes, but less than strangers served one after another would hold
    // it (10 s each, the handshake's bound), so a copy that waits behind
    // them fails instead of passing slowly.
    let common =
        format!("-reqsize 64 -bytes {bytes} -qd 3 -e2e destination 127.0.0.1:{p} -e2e timeout 15");
    let d = destination(
        &s.root,
        &format!("-op write -target dst.dat {common} -e2e isdestination --json d.json"),
        &[],
    );
    let mut strangers = Vec::new();
    for port in p..p + 3 {
        let addr = format!("127.0.0.1:{port}");
        strangers.push(Stranger::silent(&addr));
        strangers.push(Stranger::trickle(&addr, std::time::Duration::from_secs(1)));
    }
    // The strangers are in (the kernel took their connections) before
    // the source starts.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let src = source(
        &s.root,
        &format!("-op read -target src.dat {common} -e2e issource --json s.json"),
        &[],
    );
    let dst = d.wait(60);
    assert_eq!(src.code, Some(0), "source: {}", src.stderr);
    assert_eq!(dst.code, Some(0), "destination: {}", dst.stderr);
    assert!(same(&s.path("src.dat"), &s.path("dst.dat")));
    let dj = json(&s.path("d.json"));
    assert_eq!(
        dj["payload"]["combined"]["write_bytes"].as_u64(),
        Some(bytes as u64)
    );
    let open = wait_closed(&strangers, std::time::Duration::from_secs(30));
    assert_eq!(open, 0, "strangers still connected after the copy");
}

/// A destination on a block device that holds a file system is refused
/// before it binds a port (exit 2, naming the device and -force), so a
/// source never connects; with -force it listens and the copy lands on
/// the device. Before, it listened, and refused only after the
/// handshake: its source saw "Connection reset by peer" and no reason
/// (and with no source, it waited out its timeout and said exit 1).
#[test]
fn a_destination_on_a_block_device_holding_a_file_system_is_refused_before_it_listens() {
    let dev = match common::loopfs::LoopDev::scratch("e2e-blockdev", 16) {
        Ok(d) => d,
        Err(why) => return common::skip_or_fail("e2e_blockdev", &why),
    };
    common::loopfs::mkfs(&dev, "ext4", &[]).unwrap();
    let s = Scratch::new("e2e-blockdev-files");
    random_file(&s.path("src"), 4 << 20);
    let port = free_ports(1);
    let both = format!(
        "-reqsize 64 -bytes 4194304 -qd 1 -e2e destination 127.0.0.1:{port},1 -e2e timeout 5"
    );
    let mut w = vec!["xdd".to_string()];
    w.extend(words(&format!(
        "-op write -target {dev} {both} -e2e isdestination"
    )));
    let d = Bg::start(&s.root, &w, &[]).wait(60);
    assert_eq!(d.code, Some(2), "{}", d.stderr);
    assert!(
        d.stderr
            .contains(&format!("({dev}): refusing to write to this block device"))
            && d.stderr.contains("add -force"),
        "{}",
        d.stderr
    );
    assert!(!d.stderr.contains("listening on"), "{}", d.stderr);
    let dst = destination(
        &s.root,
        &format!("-op write -target {dev} {both} -e2e isdestination -force"),
        &[],
    );
    let src = source(
        &s.root,
        &format!(
            "-op read -target {} {both} -e2e issource",
            s.path("src").display()
        ),
        &[],
    );
    assert_eq!(src.code, Some(0), "{}", src.stderr);
    let d = dst.wait(60);
    assert_eq!(d.code, Some(0), "{}", d.stderr);
    let on_dev = std::fs::read(&dev.dev).unwrap();
    assert_eq!(on_dev[..4 << 20], std::fs::read(s.path("src")).unwrap()[..]);
}
