//! Block devices and file systems made inside the test: a sparse image,
//! a loop device on it and, when asked, a file system made on it and
//! mounted. On drop the file system is unmounted, then the device
//! detached, then a scratch directory of its own removed, even when the
//! test fails.

use super::Scratch;
use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A loop device over an image file; detached on drop.
pub struct LoopDev {
    /// The device, `/dev/loopN`.
    pub dev: String,
    /// Where the image lives when the device made it a place of its own;
    /// a field, so it goes after `drop` has detached the device.
    home: Option<Scratch>,
}

impl LoopDev {
    /// A blank device of `mb` MiB over a sparse image made at `img`. Err
    /// says which step failed (root is needed).
    pub fn blank(img: &Path, mb: u64) -> Result<LoopDev, String> {
        sparse(img, mb)?;
        LoopDev::attach(img)
    }

    /// A blank device of `mb` MiB whose image lives in a scratch
    /// directory of its own, named after `name`.
    pub fn scratch(name: &str, mb: u64) -> Result<LoopDev, String> {
        LoopDev::filled(name, mb, |_| Ok(()))
    }

    /// As [`LoopDev::scratch`], with `fill` writing into the image (a
    /// partition table, a file system's label) before it is attached.
    pub fn filled(
        name: &str,
        mb: u64,
        fill: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<LoopDev, String> {
        LoopDev::made(name, mb, fill, &[])
    }

    /// As [`LoopDev::scratch`], with logical sectors of `sector_bytes`
    /// (`losetup --sector-size`): O_DIRECT on it, and on a file system
    /// made on it, needs that alignment.
    pub fn sectors(name: &str, mb: u64, sector_bytes: u32) -> Result<LoopDev, String> {
        let size = sector_bytes.to_string();
        LoopDev::made(name, mb, |_| Ok(()), &["--sector-size", &size])
    }

    fn made(
        name: &str,
        mb: u64,
        fill: impl FnOnce(&Path) -> Result<(), String>,
        losetup: &[&str],
    ) -> Result<LoopDev, String> {
        if !super::is_root() {
            return Err(NOT_ROOT.into());
        }
        let home = Scratch::new(name);
        let img = home.path("img");
        sparse(&img, mb)?;
        fill(&img)?;
        let mut dev = LoopDev::attach_with(&img, losetup)?;
        dev.home = Some(home);
        Ok(dev)
    }

    /// The image at `img` attached as it is.
    pub fn attach(img: &Path) -> Result<LoopDev, String> {
        LoopDev::attach_at(img, 0)
    }

    /// A loop device over `backing` (an image or another block device)
    /// from byte `offset` on, as `losetup -o` makes it.
    pub fn attach_at(backing: &Path, offset: u64) -> Result<LoopDev, String> {
        LoopDev::attach_with(backing, &["-o", &offset.to_string()])
    }

    /// A loop device over `backing`, made by `losetup` with `options`.
    fn attach_with(backing: &Path, options: &[&str]) -> Result<LoopDev, String> {
        if !super::is_root() {
            return Err(NOT_ROOT.into());
        }
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .args(options)
            .arg(backing)
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!("losetup: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(LoopDev {
            dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            home: None,
        })
    }

    /// `loop3` for `/dev/loop3`: the name /sys and /proc/diskstats use.
    pub fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }

    /// The device's `MAJ:MIN`, as cgroups' io files name it.
    pub fn majmin(&self) -> String {
        let rdev = std::fs::metadata(&self.dev).map(|m| m.rdev()).unwrap_or(0);
        format!("{}:{}", libc::major(rdev), libc::minor(rdev))
    }
}

const NOT_ROOT: &str = "not root: loop devices and mounts need root";

impl fmt::Display for LoopDev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.dev)
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
        // `losetup -d` of a device still open (udev probing it after a
        // umount) only marks it to clear on its last close: wait, a
        // bounded while, until its backing file is gone, so that a test
        // going on after the drop sees it detached.
        let name = self.dev.trim_start_matches("/dev/");
        let backing = Path::new("/sys/block").join(name).join("loop/backing_file");
        for _ in 0..500 {
            if !backing.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Makes `fs` (`ext4`, `xfs`, `btrfs`) on `dev`, quietly and over
/// whatever it holds, with `options` (`["-O", "^has_journal"]`).
pub fn mkfs(dev: &LoopDev, fs: &str, options: &[&str]) -> Result<(), String> {
    // The ext family forces with -F, xfs and btrfs with -f.
    let force = if fs.starts_with("ext") { "-F" } else { "-f" };
    run(Command::new(format!("mkfs.{fs}"))
        .args(["-q", force])
        .args(options)
        .arg(&dev.dev))
}

/// A file system on a loop device, mounted; unmounted, then the device
/// detached, on drop.
pub struct LoopFs {
    /// Where it is mounted.
    pub at: PathBuf,
    /// The device under it; a field, so it is detached after `drop` has
    /// unmounted.
    pub dev: LoopDev,
}

impl LoopFs {
    /// An ext4 of `mb` MiB named `name` in `s`, made with `options`
    /// (`["-O", "^has_journal"]`) and mounted on `s/name`. Err says which
    /// step failed (root is needed).
    pub fn ext4(s: &Scratch, name: &str, mb: u64, options: &[&str]) -> Result<LoopFs, String> {
        let dev = LoopDev::blank(&s.path(&format!("{name}.img")), mb)?;
        LoopFs::make(dev, "ext4", options, &s.path(name), &[])
    }

    /// A file system `fs` of `mb` MiB in a scratch directory of its own
    /// (named after `name`), mounted with `mount_options` (`["-o",
    /// "compress-force=zstd"]`).
    pub fn scratch(
        name: &str,
        mb: u64,
        fs: &str,
        mount_options: &[&str],
    ) -> Result<LoopFs, String> {
        let dev = LoopDev::scratch(name, mb)?;
        let at = dev.home.as_ref().map(|h| h.path("mnt"));
        let at = at.ok_or("a scratch device has a directory of its own")?;
        LoopFs::make(dev, fs, &[], &at, mount_options)
    }

    /// Makes `fs` on `dev` with `mkfs_options` and mounts it on `at`
    /// (made if missing) with `mount_options`. On Err the device is
    /// detached.
    pub fn make(
        dev: LoopDev,
        fs: &str,
        mkfs_options: &[&str],
        at: &Path,
        mount_options: &[&str],
    ) -> Result<LoopFs, String> {
        mkfs(&dev, fs, mkfs_options)?;
        LoopFs::mount(dev, at, mount_options)
    }

    /// Mounts the file system `dev` holds on `at` (made if missing).
    pub fn mount(dev: LoopDev, at: &Path, options: &[&str]) -> Result<LoopFs, String> {
        std::fs::create_dir_all(at).map_err(|e| format!("{}: {e}", at.display()))?;
        run(Command::new("mount").args(options).arg(&dev.dev).arg(at))?;
        Ok(LoopFs {
            at: at.to_path_buf(),
            dev,
        })
    }

    /// `loop3` for `/dev/loop3`.
    pub fn name(&self) -> &str {
        self.dev.name()
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.at).status();
    }
}

/// A sparse file of `mb` MiB at `img`.
fn sparse(img: &Path, mb: u64) -> Result<(), String> {
    std::fs::File::create(img)
        .and_then(|f| f.set_len(mb << 20))
        .map_err(|e| format!("sparse file {}: {e}", img.display()))
}

fn run(c: &mut Command) -> Result<(), String> {
    let o = c.output().map_err(|e| format!("{c:?}: {e}"))?;
    match o.status.success() {
        true => Ok(()),
        false => Err(format!("{c:?}: {}", String::from_utf8_lossy(&o.stderr))),
    }
}
