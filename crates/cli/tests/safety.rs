//! Device safety with libblkid: loop devices holding real file systems,
//! partition tables, a LUKS header (each made by its own tool) and an LVM
//! physical volume label must
//! be refused for writing without `-force` and left untouched; with
//! `-force` the write goes through; an all-zero device is writable.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::loopfs::LoopDev;
use common::skip_or_fail;

/// MiB of every test device: sparse, so it costs nothing in the tmpfs.
const DEVICE_MB: u64 = 64;
/// Bytes compared before and after a refused write.
const CHECKED_BYTES: usize = 4 << 20;

/// The first bytes of a device: what a refused write must leave as it was.
fn head(lo: &LoopDev) -> Vec<u8> {
    let mut b = std::fs::read(&lo.dev).unwrap();
    b.truncate(CHECKED_BYTES);
    b
}

/// Runs `cmd args... <img>`, feeding
/// `stdin`, and says what failed.
fn tool(cmd: &str, args: &[&str], img: &Path, stdin: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new(cmd)
        .args(args)
        .arg(img)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{cmd}: {e} (scripts/install-deps.sh installs it)"))?;
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(stdin.as_bytes())
        .map_err(|e| e.to_string())?;
    drop(input);
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn xdd(line: &str) -> Output {
    let mut w = vec!["xdd"];
    w.extend(line.split_whitespace());
    common::iolab(&w)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The shared check: refused (exit 2, naming `what` and `-force`) and
/// untouched; then written with `-force`.
fn refused_then_forced(test: &str, what: &str, fill: impl FnOnce(&Path) -> Result<(), String>) {
    let lo = match LoopDev::filled(test, DEVICE_MB, fill) {
        Ok(l) => l,
        Err(why) => return skip_or_fail(test, &why),
    };
    let before = head(&lo);
    let line = format!(
        "-op write -target {} -reqsize 4 -numreqs 16 -datapattern 0x5a",
        lo.dev
    );
    let o = xdd(&line);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{test}: {err}");
    assert!(
        err.contains(what) && err.contains("-force"),
        "{test}: the message must name {what} and -force: {err}"
    );
    assert!(
        before == head(&lo),
        "{test}: the refused write changed the device"
    );
    let o = xdd(&format!("{line} -force"));
    assert_eq!(o.status.code(), Some(0), "{test}: -force: {}", stderr(&o));
    let after = head(&lo);
    assert!(
        after[..16 << 10].iter().all(|&b| b == 0x5a),
        "{test}: -force did not write the device"
    );
}

#[test]
fn a_minix_file_system_is_refused() {
    refused_then_forced("safety-minix", "minix", |img| {
        tool("mkfs.minix", &[], img, "")
    });
}

#[test]
fn a_bfs_file_system_is_refused() {
    refused_then_forced("safety-bfs", "bfs", |img| tool("mkfs.bfs", &[], img, ""));
}

#[test]
fn a_cramfs_image_is_refused() {
    refused_then_forced("safety-cramfs", "cramfs", |img| {
        // mkfs.cramfs builds an image from a directory: build it beside the
        // device image, then copy it to the device's start.
        let dir = img.with_file_name("cramfs-src");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("hello"), b"hello").map_err(|e| e.to_string())?;
        let cram = img.with_file_name("cram.img");
        let st = Command::new("mkfs.cramfs")
            .arg(&dir)
            .arg(&cram)
            .output()
            .map_err(|e| format!("mkfs.cramfs: {e}"))?;
        if !st.status.success() {
            return Err(format!(
                "mkfs.cramfs: {}",
                String::from_utf8_lossy(&st.stderr)
            ));
        }
        copy_into(&cram, img, 0)
    });
}

#[test]
fn an_ext4_two_mib_into_the_device_is_refused() {
    refused_then_forced("safety-ext4-offset", "ext4", |img| {
        let fs = img.with_file_name("ext4.img");
        std::fs::File::create(&fs)
            .and_then(|f| f.set_len(16 << 20))
            .map_err(|e| e.to_string())?;
        tool("mkfs.ext4", &["-q", "-F"], &fs, "")?;
        copy_into(&fs, img, 2 << 20)
    });
}

#[test]
fn a_gpt_partition_table_is_refused() {
    refused_then_forced("safety-gpt", "GPT", |img| {
        tool("sfdisk", &["-q"], img, "label: gpt\n,16M\n")
    });
}

#[test]
fn an_mbr_partition_table_is_refused() {
    refused_then_forced("safety-mbr", "MBR", |img| {
        tool("sfdisk", &["-q"], img, "label: dos\n,16M,83\n")
    });
}

#[test]
fn a_luks_header_is_refused() {
    refused_then_forced("safety-luks", "crypto_LUKS", |img| {
        // pbkdf2 with few iterations: the key's strength does not matter
        // here, and argon2 would want a lot of memory.
        let args = [
            "luksFormat",
            "--batch-mode",
            "--type",
            "luks2",
            "--pbkdf",
            "pbkdf2",
            "--pbkdf-force-iterations",
            "1000",
            "--key-file",
            "-",
        ];
        tool("cryptsetup", &args, img, "iolab-test-key")
    });
}

#[test]
fn an_lvm_physical_volume_label_is_refused() {
    refused_then_forced("safety-lvm", "LVM2_member", |img| {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(img)
            .map_err(|e| e.to_string())?;
        f.write_all_at(&lvm2_label(DEVICE_MB << 20), 512)
            .map_err(|e| e.to_string())
    });
}

/// An LVM2 physical volume label as pvcreate writes it in sector 1
/// (lvm2's documented on-disk label: "LABELONE", its sector, a CRC of the
/// rest of the sector, the offset of the PV header, "LVM2 001"; then the
/// PV header: a 32-character UUID, the device size and one data area).
/// Written here because lvm2 itself needs udev and device-mapper.
fn lvm2_label(device_bytes: u64) -> [u8; 512] {
    let mut l = [0u8; 512];
    l[0..8].copy_from_slice(b"LABELONE");
    l[8..16].copy_from_slice(&1u64.to_le_bytes());
    l[20..24].copy_from_slice(&32u32.to_le_bytes());
    l[24..32].copy_from_slice(b"LVM2 001");
    l[32..64].copy_from_slice(b"iolabtestpv0123456789abcdefghijk");
    l[64..72].copy_from_slice(&device_bytes.to_le_bytes());
    l[72..80].copy_from_slice(&(1u64 << 20).to_le_bytes());
    let crc = lvm2_crc(&l[20..]);
    l[16..20].copy_from_slice(&crc.to_le_bytes());
    l
}

/// lvm2's label checksum: reflected CRC-32 (polynomial 0xEDB88320) from
/// the initial value 0xF597A6CF, without a final inversion.
fn lvm2_crc(data: &[u8]) -> u32 {
    let mut crc = 0xF597_A6CFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ if crc & 1 == 1 { 0xEDB8_8320 } else { 0 };
        }
    }
    crc
}

#[test]
fn an_all_zero_device_is_writable() {
    let test = "safety-zero";
    let lo = match LoopDev::scratch(test, DEVICE_MB) {
        Ok(l) => l,
        Err(why) => return skip_or_fail(test, &why),
    };
    let o = xdd(&format!(
        "-op write -target {} -reqsize 4 -numreqs 16 -datapattern 0x5a",
        lo.dev
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(head(&lo)[..16 << 10].iter().all(|&b| b == 0x5a));
}

/// A device found unused is held exclusively while it is written: mkfs
/// (which opens it exclusively too) is refused during the run, by xdd
/// and by the disk survey, so no file system can appear under the
/// writes (one was made and mounted meanwhile, and the survey wrote into
/// it).
#[test]
fn a_device_being_written_is_held_against_mkfs() {
    let test = "safety-claim";
    let lo = match LoopDev::scratch(test, DEVICE_MB) {
        Ok(l) => l,
        Err(why) => return skip_or_fail(test, &why),
    };
    if Command::new("mkfs.ext4").arg("-V").output().is_err() {
        return skip_or_fail(test, "mkfs.ext4 is missing");
    }
    let s = common::Scratch::new("safety-claim-out");
    let slow_xdd = format!(
        "xdd -op write -target {} -reqsize 4 -numreqs 100 -throttle ops 50",
        lo.dev
    );
    let survey = format!(
        "survey disk --size 16 --rszlo 4 --rszhi 1024 --crghi 1 --thrhi 4 --rslt {} {}",
        s.path("r").display(),
        lo.dev
    );
    for line in [slow_xdd, survey] {
        let mut run = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(line.split_whitespace())
            .env("CI", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Once the run writes (its checks and its claim are behind it:
        // data at the first offset it writes), mkfs is tried.
        let first = if line.starts_with("xdd") { 0 } else { 1 << 20 };
        let holds = |_pid: u32| {
            use std::os::unix::fs::FileExt;
            let mut b = [0u8; 4096];
            std::fs::File::open(&lo.dev)
                .and_then(|f| f.read_exact_at(&mut b, first))
                .is_ok_and(|()| b.iter().any(|&x| x != 0))
        };
        let mut tries = 0;
        while !holds(run.id()) && run.try_wait().unwrap().is_none() && tries < 1000 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            tries += 1;
        }
        let mkfs = Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&lo.dev)
            .output()
            .unwrap();
        let o = run.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{line}: {}", stderr(&o));
        assert!(
            !mkfs.status.success(),
            "{line}: mkfs ran on the device being written"
        );
        let m = String::from_utf8_lossy(&mkfs.stderr);
        assert!(m.contains("in use") || m.contains("busy"), "{line}: {m}");
    }
}

/// Copies the file `src` into `dst` at byte `offset`, keeping dst's size.
fn copy_into(src: &Path, dst: &Path, offset: u64) -> Result<(), String> {
    use std::os::unix::fs::FileExt;
    let bytes = std::fs::read(src).map_err(|e| e.to_string())?;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dst)
        .map_err(|e| e.to_string())?;
    f.write_all_at(&bytes, offset).map_err(|e| e.to_string())
}
