//! A file system made inside the test: a sparse image in the scratch
//! directory, a loop device on it, mkfs and a mount; unmounted and the
//! device detached on drop, even when the test fails.

use super::Scratch;
use std::path::PathBuf;
use std::process::Command;

/// A mounted loop file system; taken down on drop.
pub struct LoopFs {
    /// The loop device, `/dev/loopN`.
    pub dev: String,
    /// Where it is mounted.
    pub at: PathBuf,
    mounted: bool,
}

impl LoopFs {
    /// An ext4 of `mb` MiB named `name` in `s`, made with `mkfs.ext4 -q
    /// -F` and `options` (`["-O", "^has_journal"]`), mounted on
    /// `s/name`. Err says which step failed (root is needed).
    pub fn ext4(s: &Scratch, name: &str, mb: u64, options: &[&str]) -> Result<LoopFs, String> {
        if !super::is_root() {
            return Err("not root: loop devices and mounts need root".into());
        }
        let img = s.path(&format!("{name}.img"));
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(mb << 20))
            .map_err(|e| format!("sparse file {}: {e}", img.display()))?;
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&img)
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!("losetup: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let mut fs = LoopFs {
            dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            at: s.path(name),
            mounted: false,
        };
        std::fs::create_dir_all(&fs.at).map_err(|e| format!("{}: {e}", fs.at.display()))?;
        run(Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .args(options)
            .arg(&fs.dev))?;
        run(Command::new("mount")
            .args(["-t", "ext4", &fs.dev])
            .arg(&fs.at))?;
        fs.mounted = true;
        Ok(fs)
    }

    /// `loop3` for `/dev/loop3`.
    pub fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }
}

fn run(c: &mut Command) -> Result<(), String> {
    let o = c.output().map_err(|e| format!("{c:?}: {e}"))?;
    match o.status.success() {
        true => Ok(()),
        false => Err(format!("{c:?}: {}", String::from_utf8_lossy(&o.stderr))),
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.at).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}
