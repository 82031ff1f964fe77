//! Where the `mds` survey works, and the kit's `stripe_count` and `layer`
//! checked against what that file system can do, before anything is made.
//!
//! Targets are directories on any file system, or, on a Lustre client,
//! the kit's MDT names (`lustre-MDT0000`): each named MDT gets the
//! survey's directories made on it (`lfs mkdir -i INDEX`) in the Lustre
//! mount. With no targets on a Lustre client, every active MDT `lfs mdts`
//! lists is surveyed, as the kit finds every MDT with `lctl dl`.
//! `stripe_count` above 0 gives the survey's directories that default
//! layout (`lfs setstripe -c N`), so every file created gets N OST
//! objects, as the kit's `test_create -c N`; off Lustre it is refused.
//! `layer` is the part of the stack the survey enters: iolab's one layer
//! is `fs`, the file system's own interface, as a client uses it.
//!
//! ```
//! use iolab_survey::mds_plan::{plan, MdsTargetArgs};
//! let refused = plan(&MdsTargetArgs {
//!     targets: &["/proc".into()],
//!     lustre_mount: None,
//!     stripe_count: 2,
//!     layer: None,
//! });
//! assert_eq!(refused.unwrap_err().option, "stripe_count");
//! ```

use crate::lustre;
use crate::mds::MdsLustre;
use crate::ParamError;
use std::path::{Path, PathBuf};

/// Most stripes a Lustre file can have (Lustre's LOV_MAX_STRIPE_COUNT).
pub const MAX_STRIPE_COUNT: u64 = 2000;
pub use crate::mds::FS_LAYER;
/// The layers of Lustre's MDS stack the kit's echo_client can enter.
pub const KIT_LAYERS: &[&str] = &["mdd", "mdt", "osd"];

/// What the user asked for.
#[derive(Debug, Clone, Copy)]
pub struct MdsTargetArgs<'a> {
    /// Directories or MDT names (`targets`), possibly none.
    pub targets: &'a [PathBuf],
    /// The Lustre client mount MDT names are surveyed in (default: the
    /// one mounted file system of that name).
    pub lustre_mount: Option<&'a Path>,
    /// The kit's `stripe_count` (0: the directory's default layout).
    pub stripe_count: u64,
    /// The kit's `layer`.
    pub layer: Option<&'a str>,
}

/// The survey's targets as planned.
#[derive(Debug, Clone, PartialEq)]
pub struct MdsPlan {
    /// One directory per target (on Lustre with MDTs, the mount repeated).
    pub targets: Vec<PathBuf>,
    /// Set when the targets are on Lustre (directories made with `lfs`).
    pub lustre: Option<MdsLustre>,
    /// What the user should know (MDTs left out, stripes Lustre caps).
    pub notes: Vec<String>,
}

/// Plans the targets and checks `stripe_count` and `layer`; runs only
/// `lfs mdts` / `lfs osts`, which change nothing.
pub fn plan(a: &MdsTargetArgs) -> Result<MdsPlan, ParamError> {
    let names = mdt_names(a.targets)?;
    let mount = find_mount(a.lustre_mount, names.as_deref(), a.targets.is_empty())?;
    let dirs_on_lustre = !a.targets.is_empty() && a.targets.iter().all(|t| lustre::is_lustre(t));
    check_layer(a.layer, mount.is_some() || dirs_on_lustre, a.targets)?;
    let mut plan = match (&mount, names) {
        (Some(m), Some(names)) => named(m, &names)?,
        (Some(m), None) if a.targets.is_empty() => all_mdts(m)?,
        (Some(m), None) => dirs_in(m, a.targets)?,
        (None, _) => MdsPlan {
            targets: a.targets.to_vec(),
            lustre: dirs_on_lustre.then(MdsLustre::default),
            notes: vec![],
        },
    };
    check_stripe_count(a.stripe_count, &mut plan)?;
    Ok(plan)
}

/// True for the kit's MDT names: `FSNAME-MDTxxxx` (4 hex digits).
pub fn is_mdt_name(s: &str) -> bool {
    let Some((fs, idx)) = s.rsplit_once("-MDT") else {
        return false;
    };
    !fs.is_empty()
        && fs.len() <= 8
        && fs.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && idx.len() == 4
        && idx.bytes().all(|c| c.is_ascii_hexdigit())
}

/// The targets as MDT names when they are (None when they are
/// directories); a mix, or the kit's `HOST:MDT` form, is refused.
fn mdt_names(targets: &[PathBuf]) -> Result<Option<Vec<String>>, ParamError> {
    let text: Vec<String> = targets.iter().map(|t| t.display().to_string()).collect();
    if let Some(t) = text
        .iter()
        .find(|t| t.split_once(':').is_some_and(|(_, n)| is_mdt_name(n)))
    {
        return Err(ParamError::new(
            "targets",
            format!("{t}: the kit's HOST:MDT form drives an MDS from the MDS itself; iolab runs on a Lustre client: give the MDT name alone"),
        ));
    }
    let named = text.iter().filter(|t| is_mdt_name(t)).count();
    match named {
        0 => Ok(None),
        n if n == text.len() => Ok(Some(text)),
        _ => Err(ParamError::new(
            "targets",
            format!(
                "'{}' mixes MDT names and directories: give one or the other",
                text.join(" ")
            ),
        )),
    }
}

/// The Lustre mount the survey works in, when it works on MDTs: the one
/// given, else the mounted file system the MDT names belong to, else
/// (no targets at all) the one Lustre file system mounted here.
fn find_mount(
    given: Option<&Path>,
    names: Option<&[String]>,
    no_targets: bool,
) -> Result<Option<PathBuf>, ParamError> {
    if let Some(m) = given {
        return Ok(Some(m.to_path_buf()));
    }
    let mounted = lustre::mounts();
    if let Some(names) = names {
        let fsnames: Vec<&str> = names
            .iter()
            .filter_map(|n| n.rsplit_once("-MDT").map(|(fs, _)| fs))
            .collect();
        let fs = fsnames[0];
        if fsnames.iter().any(|f| *f != fs) {
            return Err(ParamError::new(
                "targets",
                "the MDT names belong to more than one file system: survey one at a time",
            ));
        }
        return match mounted.iter().find(|m| m.fsname == fs) {
            Some(m) => Ok(Some(m.path.clone())),
            None => Err(ParamError::new(
                "targets",
                format!("no Lustre file system '{fs}' is mounted here (/proc/self/mounts): mount it or give --lustre-mount DIR"),
            )),
        };
    }
    match (no_targets, mounted.as_slice()) {
        (true, [one]) => Ok(Some(one.path.clone())),
        (true, [_, _, ..]) => Err(ParamError::new(
            "targets",
            format!(
                "no targets given and several Lustre file systems are mounted ({}): give --lustre-mount DIR or targets",
                mounted.iter().map(|m| m.path.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        )),
        _ => Ok(None),
    }
}

fn list_mdts(mount: &Path) -> Result<lustre::Osts, ParamError> {
    lustre::mdts(mount).map_err(|e| ParamError::new("targets", e.to_string()))
}

/// The named MDTs, each found in `lfs mdts` and active.
fn named(mount: &Path, names: &[String]) -> Result<MdsPlan, ParamError> {
    let mdts = list_mdts(mount)?;
    let listed = || {
        mdts.names
            .iter()
            .map(|(_, n)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut indices = Vec::new();
    for n in names {
        let Some(i) = mdts.index_of(n) else {
            return Err(ParamError::new(
                "targets",
                format!(
                    "{n} is not an MDT of {} ('lfs mdts' lists: {})",
                    mount.display(),
                    listed()
                ),
            ));
        };
        if !mdts.active.contains(&i) {
            return Err(ParamError::new(
                "targets",
                format!("{n} is not ACTIVE ('lfs mdts {}')", mount.display()),
            ));
        }
        if indices.contains(&i) {
            return Err(ParamError::new("targets", format!("{n} is named twice")));
        }
        indices.push(i);
    }
    Ok(on_mdts(mount, indices, names.to_vec(), vec![]))
}

/// Every active MDT of the mount (the kit's default, `lctl dl`'s MDTs).
fn all_mdts(mount: &Path) -> Result<MdsPlan, ParamError> {
    let mdts = list_mdts(mount)?;
    if mdts.active.is_empty() {
        return Err(ParamError::new(
            "targets",
            format!("'lfs mdts {}' lists no active MDT", mount.display()),
        ));
    }
    let name = |i: &u32| {
        mdts.names
            .iter()
            .find(|(j, _)| j == i)
            .map_or_else(|| format!("MDT{i:04x}"), |(_, n)| n.clone())
    };
    let names = mdts.active.iter().map(name).collect();
    let notes = match mdts.inactive.is_empty() {
        true => vec![],
        false => vec![format!("MDTs not active, left out: {:?}", mdts.inactive)],
    };
    Ok(on_mdts(mount, mdts.active.clone(), names, notes))
}

fn on_mdts(mount: &Path, indices: Vec<u32>, names: Vec<String>, notes: Vec<String>) -> MdsPlan {
    MdsPlan {
        targets: vec![mount.to_path_buf(); indices.len()],
        lustre: Some(MdsLustre {
            mdt_indices: indices,
            mdt_names: names,
        }),
        notes,
    }
}

/// Directories in the Lustre mount given: taken as Lustre directories.
fn dirs_in(mount: &Path, dirs: &[PathBuf]) -> Result<MdsPlan, ParamError> {
    let real = |p: &Path| {
        std::fs::canonicalize(p)
            .map_err(|e| ParamError::new("targets", format!("{}: {e}", p.display())))
    };
    let m = real(mount)?;
    for d in dirs {
        if !real(d)?.starts_with(&m) {
            return Err(ParamError::new(
                "targets",
                format!(
                    "{} is not in the Lustre mount {} (--lustre-mount)",
                    d.display(),
                    mount.display()
                ),
            ));
        }
    }
    Ok(MdsPlan {
        targets: dirs.to_vec(),
        lustre: Some(MdsLustre::default()),
        notes: vec![],
    })
}

/// `layer`: `fs` (or unset) is what iolab does; the kit's MDS layers are
/// refused with the reason this file system gives.
fn check_layer(layer: Option<&str>, lustre: bool, targets: &[PathBuf]) -> Result<(), ParamError> {
    let Some(l) = layer.filter(|l| *l != FS_LAYER) else {
        return Ok(());
    };
    let why = if !KIT_LAYERS.contains(&l) {
        format!("unknown layer '{l}': the kit's layers are mdd, mdt and osd (of Lustre's MDS stack); iolab's is {FS_LAYER}")
    } else if lustre {
        format!("layer={l}: entering the MDS stack at its {l} layer needs the kit's echo_client (obdecho, lctl) on the MDS node; iolab runs on a Lustre client, whose operations go through every layer of the stack: use layer={FS_LAYER}")
    } else {
        let shown = targets
            .first()
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        format!("layer={l}: {shown} is not on Lustre and has no metadata server stack ({} are layers of Lustre's MDS); the file system's own interface is the one layer there: use layer={FS_LAYER}", KIT_LAYERS.join(", "))
    };
    Err(ParamError::new("layer", why))
}

/// `stripe_count`: needs Lustre and an active OST; above the OSTs there
/// are, Lustre stripes each file over all of them (said in a note).
fn check_stripe_count(n: u64, plan: &mut MdsPlan) -> Result<(), ParamError> {
    if n == 0 {
        return Ok(());
    }
    if n > MAX_STRIPE_COUNT {
        return Err(ParamError::new(
            "stripe_count",
            format!("stripe_count={n}: Lustre files have at most {MAX_STRIPE_COUNT} stripes"),
        ));
    }
    if plan.lustre.is_none() {
        let off = plan
            .targets
            .iter()
            .find(|t| !lustre::is_lustre(t))
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        return Err(ParamError::new(
            "stripe_count",
            format!("stripe_count={n}: {off} is not on Lustre; its file system cannot stripe files over OSTs: drop stripe_count"),
        ));
    }
    let Some(first) = plan.targets.first() else {
        return Ok(());
    };
    let osts = lustre::osts(first).map_err(|e| ParamError::new("stripe_count", e.to_string()))?;
    match osts.active.len() as u64 {
        0 => Err(ParamError::new(
            "stripe_count",
            format!(
                "stripe_count={n}: 'lfs osts' lists no active OST to put the files' objects on"
            ),
        )),
        have if have < n => {
            plan.notes.push(format!("stripe_count={n} is more than the {have} active OSTs: Lustre gives each file {have} stripes"));
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mdt_names_are_the_kits() {
        assert!(is_mdt_name("lustre-MDT0000"));
        assert!(is_mdt_name("fs_1-MDT00a1"));
        assert!(!is_mdt_name("lustre-OST0000"));
        assert!(!is_mdt_name("/mnt/lustre-MDT0000"));
        assert!(!is_mdt_name("lustre-MDT000"));
        assert!(!is_mdt_name("-MDT0000"));
    }

    #[test]
    fn names_and_directories_do_not_mix_and_host_forms_are_refused() {
        let t = |v: &[&str]| v.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(mdt_names(&t(&["/a", "/b"])).unwrap(), None);
        assert_eq!(
            mdt_names(&t(&["x-MDT0001"])).unwrap(),
            Some(vec!["x-MDT0001".to_string()])
        );
        assert!(mdt_names(&t(&["x-MDT0001", "/a"])).is_err());
        assert!(mdt_names(&t(&["mds1:x-MDT0001"])).is_err());
    }

    #[test]
    fn only_the_fs_layer_exists_off_lustre() {
        let t = [PathBuf::from("/proc")];
        assert!(check_layer(None, false, &t).is_ok());
        assert!(check_layer(Some("fs"), false, &t).is_ok());
        for l in ["mdd", "mdt", "osd", "llite"] {
            let e = check_layer(Some(l), false, &t).unwrap_err();
            assert_eq!(e.option, "layer");
            assert!(e.message.contains(l), "{e}");
        }
        let e = check_layer(Some("mdd"), true, &t).unwrap_err();
        assert!(e.message.contains("echo_client"), "{e}");
    }
}
