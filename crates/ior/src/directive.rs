//! IOR's `key=value` directives: what `-O` takes (several separated by
//! commas) and what the lines of a `-f` script hold. Names are
//! case-insensitive, as IOR reads them. Values are read strictly: where
//! IOR's `atoi` takes `x` as 0, iolab names the directive and the value.
//! A directive iolab does not implement is refused by name.

use crate::params::{Format, Globals, Hog, Packet, Params};
use crate::IorError;
use std::path::PathBuf;

/// Sets one directive.
type Set = fn(&str, &mut Params, &mut Globals) -> Result<(), String>;

/// A whole number with IOR's k/m/g/t suffixes.
fn num(v: &str) -> Result<u64, String> {
    iolab_core::units::parse_size(v).map_err(|e| e.to_string())
}

/// A signed whole number (seeds may be negative, as IOR's `int`s).
fn int(v: &str) -> Result<i64, String> {
    iolab_core::units::parse_signed(v).map_err(|e| e.to_string())
}

/// A 0/1 switch as IOR writes them (`readFile=1`); any count for the
/// counted ones.
fn count(v: &str) -> Result<u32, String> {
    let n = num(v)?;
    u32::try_from(n).map_err(|_| format!("'{v}' is too large"))
}

/// A count within `lo..=hi`, as the command line's option takes it
/// (`-i`, `-N`): `repetitions=0` is refused as `-i 0` is.
fn within(v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match num(v)? {
        n if n < lo => Err(format!("'{v}' must be at least {lo}")),
        n if n > hi => Err(format!("'{v}' is above the limit of {hi}")),
        n => Ok(n),
    }
}

fn flag(v: &str) -> Result<bool, String> {
    count(v).map(|n| n > 0)
}

fn path(v: &str) -> Result<Option<PathBuf>, String> {
    match v.is_empty() {
        true => Err("needs a file name".into()),
        false => Ok(Some(PathBuf::from(v))),
    }
}

/// A directive that iolab refuses unless it is off (`=0`).
fn refuse_unless_zero(v: &str, why: &str) -> Result<(), String> {
    match num(v) {
        Ok(0) => Ok(()),
        _ => Err(why.to_string()),
    }
}

/// Every directive iolab knows, by IOR's name (lower case).
static DIRECTIVES: &[(&str, Set)] = &[
    ("api", |v, p, _| {
        p.api = v.to_string();
        Ok(())
    }),
    ("summaryfile", |v, _, g| {
        g.summary_file = path(v)?;
        Ok(())
    }),
    ("summaryformat", |v, _, g| {
        g.summary_format = match v.to_ascii_lowercase().as_str() {
            "default" => Format::Default,
            "json" => Format::Json,
            "csv" => Format::Csv,
            _ => return Err(format!("unknown summaryFormat '{v}': default, JSON or CSV")),
        };
        Ok(())
    }),
    ("saverankperformancedetailscsv", |v, p, _| {
        p.rank_csv = path(v)?;
        Ok(())
    }),
    ("refnum", |v, p, _| {
        p.ref_num = int(v)?;
        Ok(())
    }),
    ("debug", |v, p, _| {
        p.debug = Some(v.to_string());
        Ok(())
    }),
    ("platform", |v, p, _| {
        p.platform = Some(v.to_string());
        Ok(())
    }),
    ("testfile", |v, p, _| {
        p.test_file = v.into();
        Ok(())
    }),
    ("deadlineforstonewalling", |v, p, _| {
        p.deadline_s = num(v)?;
        Ok(())
    }),
    ("stonewallingwearout", |v, p, _| {
        p.wearout = flag(v)?;
        Ok(())
    }),
    ("stonewallingwearoutiterations", |v, p, _| {
        p.wearout_iterations = num(v)?;
        Ok(())
    }),
    ("stonewallingstatusfile", |v, p, _| {
        p.status_file = path(v)?;
        Ok(())
    }),
    ("maxtimeduration", |v, p, _| {
        p.max_time_min = num(v)?;
        Ok(())
    }),
    ("mintimeduration", |v, p, _| {
        p.min_time_s = num(v)?;
        Ok(())
    }),
    ("outlierthreshold", |v, p, _| {
        p.outlier_threshold_s = num(v)?;
        Ok(())
    }),
    ("numnodes", |v, p, _| {
        p.num_nodes = Some(num(v)?);
        Ok(())
    }),
    ("numtasks", |v, p, _| {
        p.num_tasks = Some(within(v, 1, 1 << 24)?);
        Ok(())
    }),
    ("numtasksonnode0", |v, p, _| {
        p.tasks_on_node0 = Some(num(v)?);
        Ok(())
    }),
    ("repetitions", |v, p, _| {
        p.repetitions = within(v, 1, 1_000_000)?;
        Ok(())
    }),
    ("intertestdelay", |v, p, _| {
        p.inter_test_delay_s = num(v)?;
        Ok(())
    }),
    ("interiodelay", |v, p, _| {
        p.inter_io_delay_us = num(v)?;
        Ok(())
    }),
    ("readfile", |v, p, _| {
        p.read = flag(v)?;
        Ok(())
    }),
    ("writefile", |v, p, _| {
        p.write = flag(v)?;
        Ok(())
    }),
    ("fileperproc", |v, p, _| {
        p.file_per_proc = flag(v)?;
        Ok(())
    }),
    ("taskpernodeoffset", |v, p, _| {
        p.task_per_node_offset = num(v)?;
        Ok(())
    }),
    ("reordertasksconstant", |v, p, _| {
        p.reorder = count(v)?;
        Ok(())
    }),
    ("reordertasks", |v, p, _| {
        p.reorder = count(v)?;
        Ok(())
    }),
    ("reordertasksrandom", |v, p, _| {
        p.reorder_random = count(v)?;
        Ok(())
    }),
    ("reordertasksrandomseed", |v, p, _| {
        p.reorder_seed = int(v)?;
        Ok(())
    }),
    ("checkwrite", |v, p, _| {
        p.check_write = flag(v)?;
        Ok(())
    }),
    ("checkread", |v, p, _| {
        p.check_read = flag(v)?;
        Ok(())
    }),
    ("keepfile", |v, p, _| {
        p.keep = flag(v)?;
        Ok(())
    }),
    ("keepfilewitherror", |v, p, _| {
        p.keep_with_error = flag(v)?;
        Ok(())
    }),
    ("multifile", |v, p, _| {
        p.multi_file = flag(v)?;
        Ok(())
    }),
    ("warningaserrors", |v, p, _| {
        p.warning_as_errors = flag(v)?;
        Ok(())
    }),
    ("segmentcount", |v, p, _| {
        p.segments = num(v)?;
        Ok(())
    }),
    ("blocksize", |v, p, _| {
        p.block_bytes = num(v)?;
        Ok(())
    }),
    ("transfersize", |v, p, _| {
        p.transfer_bytes = num(v)?;
        Ok(())
    }),
    ("singlexferattempt", |v, p, _| {
        p.single_xfer_attempt = flag(v)?;
        Ok(())
    }),
    ("intratestbarriers", |v, p, _| {
        p.intra_barriers = flag(v)?;
        Ok(())
    }),
    ("verbose", |v, p, _| {
        p.verbose = count(v)?;
        Ok(())
    }),
    ("collective", |v, _, _| {
        refuse_unless_zero(
            v,
            "collective I/O needs MPI-IO, which iolab ior does not offer (its APIs are POSIX, MMAP, DUMMY and S3)",
        )
    }),
    ("settimestampsignature", |v, p, _| {
        p.signature = signature(v).map_err(|e| e.to_string())?;
        Ok(())
    }),
    ("datapackettype", |v, p, _| {
        p.packet = Packet::parse(v).map_err(|e| e.to_string())?;
        Ok(())
    }),
    ("uniquedir", |v, p, _| {
        p.unique_dir = flag(v)?;
        Ok(())
    }),
    ("useexistingtestfile", |v, p, _| {
        p.use_existing = flag(v)?;
        Ok(())
    }),
    ("fsyncperwrite", |v, p, _| {
        p.fsync_per_write = flag(v)?;
        Ok(())
    }),
    ("fsync", |v, p, _| {
        p.fsync = flag(v)?;
        Ok(())
    }),
    ("randomoffset", |v, p, _| {
        p.random_offset = count(v)?;
        Ok(())
    }),
    ("memorypertask", |v, p, _| {
        p.hog = Hog::PerTask(num(v)?);
        Ok(())
    }),
    ("memorypernode", |v, p, _| {
        p.hog = hog(v).map_err(|e| e.to_string())?;
        Ok(())
    }),
    ("summaryalways", |v, p, _| {
        p.summary_always = flag(v)?;
        Ok(())
    }),
    ("useo_direct", |v, p, _| {
        p.odirect = flag(v)?;
        Ok(())
    }),
    ("--posix.odirect", |v, p, _| {
        p.odirect = flag(v)?;
        Ok(())
    }),
    ("dualmount", |v, _, _| {
        refuse_unless_zero(
            v,
            "dual mount points (-y) are not offered by iolab ior: give the mount in -o",
        )
    }),
    ("allocatebufferongpu", |v, _, _| {
        refuse_unless_zero(v, "GPU buffers are not offered by iolab ior")
    }),
    ("gpudirect", |v, _, _| {
        refuse_unless_zero(v, "GPUDirect is not offered by iolab ior")
    }),
    ("gpuid", |_, _, _| {
        Err("GPU buffers are not offered by iolab ior".into())
    }),
    ("saveperopdatacsv", |_, _, _| {
        Err("per-operation CSV files are not offered by iolab ior; --json holds each iteration's figures".into())
    }),
];

/// `-G`'s value: IOR keeps it in an `unsigned int`; a negative number
/// wraps as it does there.
pub fn signature(v: &str) -> Result<u32, IorError> {
    let n = iolab_core::units::parse_signed(v)?;
    i32::try_from(n)
        .map(|x| x as u32)
        .or_else(|_| u32::try_from(n))
        .map_err(|_| IorError::Value {
            value: v.to_string(),
            why: "does not fit in 32 bits",
        })
}

/// `-M`'s value: bytes (`2g`) or a share of the node's memory (`75%`).
pub fn hog(v: &str) -> Result<Hog, IorError> {
    use iolab_core::units::parse_size;
    match v.strip_suffix('%') {
        Some(pct) => match parse_size(pct)? {
            n @ 1..=99 => Ok(Hog::NodePercent(n)),
            _ => Err(IorError::Share(v.to_string())),
        },
        None => Ok(Hog::PerNode(parse_size(v)?)),
    }
}

/// Applies one `key=value` directive (spaces around the `=` allowed).
/// The value ends at the first blank, as IOR's `sscanf` reads it; text
/// after it is refused by name, where IOR drops it unread (so a second
/// directive after a space, or a file name with a space, would be lost).
pub fn apply(text: &str, p: &mut Params, g: &mut Globals) -> Result<(), IorError> {
    let not_one = || IorError::NotADirective(text.trim().to_string());
    let (key, value) = text
        .split_once('=')
        .map(|(k, v)| (k.trim(), v.trim()))
        .ok_or_else(not_one)?;
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(not_one());
    }
    if let Some((value, rest)) = value.split_once(char::is_whitespace) {
        return Err(IorError::Trailing {
            key: key.to_string(),
            value: value.to_string(),
            rest: rest.trim().to_string(),
        });
    }
    let lower = key.to_ascii_lowercase();
    let set = DIRECTIVES
        .iter()
        .find(|(name, _)| *name == lower)
        .map(|(_, set)| set)
        .ok_or_else(|| IorError::Unknown(key.to_string()))?;
    set(value, p, g).map_err(|why| IorError::Directive {
        key: key.to_string(),
        value: value.to_string(),
        why,
    })
}

/// Applies a line of comma-separated directives (`-O a=1,b=2`); a `#`
/// starts a comment, as in IOR's scripts.
pub fn apply_line(line: &str, p: &mut Params, g: &mut Globals) -> Result<(), IorError> {
    let line = line.split('#').next().unwrap_or("");
    for part in line.split(',') {
        if part.trim().is_empty() {
            return Err(IorError::EmptyDirective(line.trim().to_string()));
        }
        apply(part, p, g)?;
    }
    Ok(())
}

/// The names iolab knows, for help and tests.
pub fn names() -> impl Iterator<Item = &'static str> {
    DIRECTIVES.iter().map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str) -> Result<(Params, Globals), String> {
        let (mut p, mut g) = (Params::default(), Globals::default());
        apply_line(line, &mut p, &mut g)
            .map(|()| (p, g))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn reads_ior_names_in_any_case_and_several_per_line() {
        let (p, g) = run("stoneWallingWearOut=1,summaryFormat=JSON, blockSize = 4k").unwrap();
        assert!(p.wearout && g.summary_format == Format::Json && p.block_bytes == 4096);
        let (p, _) = run("STONEWALLINGSTATUSFILE=/tmp/x # a comment").unwrap();
        assert_eq!(
            p.status_file.as_deref(),
            Some(std::path::Path::new("/tmp/x"))
        );
        let (p, _) = run("dataPacketType=offset,setTimeStampSignature=-1").unwrap();
        assert_eq!((p.packet, p.signature), (Packet::Offset, u32::MAX));
        let (p, _) = run("memoryPerNode=50%").unwrap();
        assert_eq!(p.hog, Hog::NodePercent(50));
    }

    #[test]
    fn refuses_by_name_what_it_does_not_know_or_offer() {
        for (line, needle) in [
            ("bogus=1", "bogus"),
            ("summaryFormat=XML", "summaryFormat"),
            ("repetitions=x", "repetitions"),
            ("repetitions=0", "repetitions"),
            ("numTasks=0", "numTasks"),
            ("collective=1", "MPI-IO"),
            ("savePerOpDataCSV=/tmp/p", "savePerOpDataCSV"),
            ("noequals", "KEY=VALUE"),
            ("fsync=1,,keepFile=1", "empty"),
            // IOR's value stops at a blank and the rest is lost unread:
            // refused, naming what would have been lost.
            ("testFile=/tmp/s1 blockSize=64k", "'blockSize=64k' follows"),
            ("testFile=/tmp/s2 x", "'x' follows"),
            ("block Size=4k", "KEY=VALUE"),
        ] {
            let e = run(line).unwrap_err();
            assert!(e.contains(needle), "{line}: {e}");
        }
        assert!(run("collective=0").is_ok());
    }
}
