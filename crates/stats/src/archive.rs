//! The on-disk layout of one node's record (the same in a collector's
//! run directory and inside the tarball) and the .tgz that gathers all
//! nodes: `NAME/NODE/STAT.jsonl` (one JSON [`Sample`] per line),
//! `NAME/NODE/STAT.absent` (why it is missing), `NAME/NODE/notes.txt`.

use crate::config::Stat;
use crate::sample::{NodeSamples, Sample, Series};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

/// File name of a statistic's samples.
pub fn samples_file(stat: Stat) -> String {
    format!("{}.jsonl", stat.name())
}

/// File name of a statistic's absence note.
pub fn absent_file(stat: Stat) -> String {
    format!("{}.absent", stat.name())
}

/// File holding a node's notes, one per line.
pub const NOTES_FILE: &str = "notes.txt";

/// File in the tarball's top directory listing nodes that gave nothing.
pub const FAILED_FILE: &str = "failed-nodes.txt";

/// The files of one node's record, relative to its directory.
pub fn node_files(ns: &NodeSamples) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (stat, series) in &ns.stats {
        match series {
            Series::Absent(why) => out.push((absent_file(*stat), format!("{why}\n").into_bytes())),
            Series::Samples(v) => {
                let mut text = Vec::new();
                for s in v {
                    text.extend(sample_line(s));
                }
                out.push((samples_file(*stat), text));
            }
        }
    }
    if !ns.notes.is_empty() {
        out.push((NOTES_FILE.into(), (ns.notes.join("\n") + "\n").into_bytes()));
    }
    out
}

/// One sample as a JSON line.
pub fn sample_line(s: &Sample) -> Vec<u8> {
    let mut line = serde_json::to_vec(s).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Builds a node's record from its files (name relative to the node's
/// directory, contents). A torn last line (a collector killed while
/// writing) is skipped and noted.
pub fn node_from_files(node: &str, files: &BTreeMap<String, Vec<u8>>) -> NodeSamples {
    let mut ns = NodeSamples {
        node: node.to_string(),
        stats: BTreeMap::new(),
        notes: Vec::new(),
    };
    for (name, bytes) in files {
        let text = String::from_utf8_lossy(bytes);
        if name == NOTES_FILE {
            ns.notes.extend(text.lines().map(str::to_string));
            continue;
        }
        let Some((stem, ext)) = name.rsplit_once('.') else {
            continue;
        };
        let Some(stat) = Stat::from_name(stem) else {
            continue;
        };
        if ext == "absent" {
            ns.stats
                .insert(stat, Series::Absent(text.trim().to_string()));
        } else if ext == "jsonl" {
            let mut samples = Vec::new();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                match serde_json::from_str::<Sample>(line) {
                    Ok(s) => samples.push(s),
                    Err(_) => ns
                        .notes
                        .push(format!("{name}: an unreadable line was skipped")),
                }
            }
            ns.stats.insert(stat, Series::Samples(samples));
        }
    }
    ns
}

/// An uncompressed tar of the regular files of `dir` (not recursive),
/// names as they are, less `skip`, plus the `extra` (name, contents):
/// what a node sends back on stop.
pub fn tar_dir(dir: &Path, skip: &[&str], extra: &[(&str, Vec<u8>)]) -> std::io::Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    let mut names: Vec<_> = std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for n in names {
        if skip.iter().any(|s| n == *s) {
            continue;
        }
        b.append_path_with_name(dir.join(&n), &n)?;
    }
    for (name, data) in extra {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(iolab_core::clock::wall_ns() / 1_000_000_000);
        h.set_cksum();
        b.append_data(&mut h, name, data.as_slice())?;
    }
    b.into_inner()
}

/// The files of a tar stream (names to contents), regular files only.
pub fn untar(bytes: &[u8]) -> std::io::Result<BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut a = tar::Archive::new(bytes);
    for e in a.entries()? {
        let mut e = e?;
        if !e.header().entry_type().is_file() {
            continue;
        }
        let name = e.path()?.to_string_lossy().into_owned();
        let mut v = Vec::new();
        e.read_to_end(&mut v)?;
        out.insert(name, v);
    }
    Ok(out)
}

/// Writes `path` as a .tgz whose top directory is `top`, holding each
/// node's files under `top/NODE/` and, when some nodes failed, their
/// names and reasons in `top/failed-nodes.txt`.
pub fn write_tgz(
    path: &Path,
    top: &str,
    nodes: &[(String, BTreeMap<String, Vec<u8>>)],
    failed: &[(String, String)],
) -> std::io::Result<()> {
    // Whole or absent: a failure (a full file system) drops the
    // temporary file, so no .part stays beside the target. The temporary
    // name is random and created exclusively (O_EXCL, mode 0600), so a
    // shared directory (/tmp) cannot plant a link there.
    let file = iolab_output::AtomicFile::create(path)?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    let mut add = |name: String, data: &[u8]| -> std::io::Result<()> {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(iolab_core::clock::wall_ns() / 1_000_000_000);
        h.set_cksum();
        b.append_data(&mut h, name, data)
    };
    for (node, files) in nodes {
        for (name, data) in files {
            add(format!("{top}/{node}/{name}"), data)?;
        }
    }
    if !failed.is_empty() {
        let text: String = failed
            .iter()
            .map(|(n, why)| format!("{n}: {why}\n"))
            .collect();
        add(format!("{top}/{FAILED_FILE}"), text.as_bytes())?;
    }
    let mut gz = b.into_inner()?;
    gz.flush()?;
    gz.finish()?.commit()
}

/// Why a profile tarball cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// A member that would land outside the tarball's own directory
    /// (GNU tar and rsync refuse these too): nothing is written.
    #[error("member {member:?} {why}; nothing was written")]
    Unsafe {
        /// The member's name as stored.
        member: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The file is not a readable gzip'd tar.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The parts of a member's name (`.` components dropped), or why the
/// name is refused: an absolute name, or any `..` in it.
pub fn member_parts(name: &[u8]) -> Result<Vec<String>, &'static str> {
    if name.first() == Some(&b'/') {
        return Err("has an absolute name");
    }
    let mut parts = Vec::new();
    for part in name.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err("climbs out of its directory (..)"),
            p => parts.push(String::from_utf8_lossy(p).into_owned()),
        }
    }
    Ok(parts)
}

/// Refuses a link whose target leaves the tarball's top: an absolute
/// target, or one that climbs above the archive root from where the
/// link sits (a hard link's target is relative to the root).
fn check_link(member: &[u8], target: &[u8], hard: bool) -> Result<(), &'static str> {
    if target.first() == Some(&b'/') {
        return Err("is a link to an absolute path");
    }
    let mut depth: i64 = if hard {
        0
    } else {
        member_parts(member)?.len() as i64 - 1
    };
    for part in target.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => depth -= 1,
            _ => depth += 1,
        }
        if depth < 0 {
            return Err("is a link pointing outside the archive");
        }
    }
    Ok(())
}

/// Checks one member's name and, for a link, its target.
fn check_member<R: Read>(e: &tar::Entry<'_, R>) -> Result<Vec<String>, ArchiveError> {
    let name = e.path_bytes();
    let unsafe_member = |why| ArchiveError::Unsafe {
        member: String::from_utf8_lossy(&name).into_owned(),
        why,
    };
    let parts = member_parts(&name).map_err(unsafe_member)?;
    let kind = e.header().entry_type();
    if kind.is_symlink() || kind.is_hard_link() {
        let target = e.link_name_bytes().unwrap_or_default();
        check_link(&name, &target, kind.is_hard_link()).map_err(unsafe_member)?;
    }
    Ok(parts)
}

/// Everything in a profile tarball: each node's record, and the nodes
/// that failed (name, reason). The tarball is read in memory, never
/// extracted; every member is checked first, so a hostile one (`..`,
/// an absolute name, a link leading outside) refuses the whole tarball.
pub fn read_tgz(path: &Path) -> Result<(Vec<NodeSamples>, Vec<String>), ArchiveError> {
    // A FIFO at the name would hold the read without end: refused.
    let file = iolab_core::input::open(path).map_err(std::io::Error::other)?;
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut per_node: BTreeMap<String, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
    let mut failed = Vec::new();
    for e in a.entries()? {
        let mut e = e?;
        let parts = check_member(&e)?;
        if !e.header().entry_type().is_file() {
            continue;
        }
        let mut v = Vec::new();
        e.read_to_end(&mut v)?;
        match parts.as_slice() {
            [_, f] if f == FAILED_FILE => {
                failed.extend(String::from_utf8_lossy(&v).lines().map(str::to_string))
            }
            [_, node, file] => {
                per_node
                    .entry(node.to_string())
                    .or_default()
                    .insert(file.to_string(), v);
            }
            _ => {}
        }
    }
    let nodes = per_node
        .iter()
        .map(|(n, files)| node_from_files(n, files))
        .collect();
    Ok((nodes, failed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Row;

    #[test]
    fn a_record_survives_the_tarball() {
        let mut ns = NodeSamples {
            node: "n1".into(),
            stats: BTreeMap::new(),
            notes: vec!["collector was killed".into()],
        };
        let s = Sample {
            unix_ns: 5,
            mono_ns: 7,
            rows: vec![Row::new("loop0")
                .counter("writes", 3)
                .gauge("in_flight", 1.0)],
        };
        ns.stats
            .insert(Stat::Disk, Series::Samples(vec![s.clone(), s]));
        ns.stats.insert(Stat::Brw, Series::Absent("no brw".into()));
        let files: BTreeMap<String, Vec<u8>> = node_files(&ns).into_iter().collect();
        let dir = std::env::temp_dir().join(format!("iolab-arch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tgz = dir.join("p.tgz");
        write_tgz(
            &tgz,
            "p",
            &[("n1".into(), files)],
            &[("n2".into(), "unreachable".into())],
        )
        .unwrap();
        let (nodes, failed) = read_tgz(&tgz).unwrap();
        assert_eq!(nodes, vec![ns]);
        assert_eq!(failed, ["n2: unreachable"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_line_is_skipped_and_noted() {
        let mut files = BTreeMap::new();
        files.insert(
            "cpu.jsonl".to_string(),
            b"{\"unix_ns\":1,\"mono_ns\":1,\"rows\":[]}\n{\"unix_".to_vec(),
        );
        let ns = node_from_files("n", &files);
        assert!(matches!(&ns.stats[&Stat::Cpu], Series::Samples(v) if v.len() == 1));
        assert_eq!(ns.notes.len(), 1);
    }

    #[test]
    fn names_that_climb_out_are_refused() {
        assert_eq!(
            member_parts(b"./p/n/cpu.jsonl").unwrap(),
            ["p", "n", "cpu.jsonl"]
        );
        assert!(member_parts(b"p/../disk.jsonl").is_err());
        assert!(member_parts(b"/etc/passwd").is_err());
        assert!(check_link(b"p/n/l", b"../m/cpu.jsonl", false).is_ok());
        assert!(check_link(b"p/n/l", b"../../../x", false).is_err());
        assert!(check_link(b"p/n/l", b"/etc", false).is_err());
        assert!(check_link(b"p/n/l", b"p/../../x", true).is_err());
    }
}
