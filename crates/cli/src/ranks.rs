//! Under mpirun, the ranks of mdtest, ior and io500 agree before their
//! run starts (`iolab_comm::agree`): each rank reads its options and runs
//! its checks on its own, then one exchange tells every rank whether all
//! were given the same options and whether any check failed anywhere.
//! Rank 0 says what was found, naming the rank and host, before any rank
//! ends: the others wait for it at a barrier, then every rank ends with
//! the same status, MPI's finalisation bounded.

use crate::exit::{Halt, HaltKind, NotStarted};
use iolab_comm::agree::{agree, Ready, Refusal, Verdict};
use iolab_comm::World;

/// The ranks connected, then settled ([`settle`]) on what each rank
/// read and checked: `read` is this rank's command line read (`cfg` its
/// options, compared as [`option_lines`] less `skip`, with the backend's
/// name), `check` this rank's checks of it. Also when the command line
/// was refused: the ranks say so together.
pub fn connect_and_settle<R, T>(
    prog: &str,
    read: Result<R, NotStarted>,
    compared: impl FnOnce(&R) -> Vec<String>,
    check: impl FnOnce(R, &World) -> Result<T, NotStarted>,
) -> Result<(World, T), Halt> {
    let world = iolab_comm::connect(iolab_comm::CommMode::Auto)
        .map_err(|e| NotStarted::from(e.to_string()).halt(prog))?;
    let options = read.as_ref().ok().map(compared);
    let checked = read.and_then(|r| check(r, &world));
    let settled = settle(prog, &world, options.as_deref(), checked)?;
    Ok((world, settled))
}

/// A rank's options as the ranks compare them: `cfg`'s fields less
/// `skip` ([`option_lines`]), and the backend's name.
pub fn options_with_backend(
    cfg: &impl serde::Serialize,
    skip: &[&str],
    backend: &str,
) -> Vec<String> {
    let mut lines = option_lines(cfg, skip);
    lines.push(format!("backend = {backend}"));
    lines
}

/// `value`'s fields as `name = value` lines (nested names joined with
/// `.`, list items as `name[i]`), leaving out the fields named in `skip`
/// (by their full name without list indices, such as `globals.json` or
/// `tests.params.rank_csv`): what each rank was given, as the ranks
/// compare it.
pub fn option_lines(value: &impl serde::Serialize, skip: &[&str]) -> Vec<String> {
    let mut lines = Vec::new();
    match serde_json::to_value(value) {
        Ok(v) => flatten("", &v, skip, &mut lines),
        // Never for the plain configs given here; the rank's options
        // are then taken as unreadable and not compared.
        Err(e) => lines.push(format!("options = (unreadable: {e})")),
    }
    lines
}

fn flatten(name: &str, v: &serde_json::Value, skip: &[&str], out: &mut Vec<String>) {
    use serde_json::Value;
    if skip.contains(&without_indices(name).as_str()) {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let n = match name.is_empty() {
                    true => k.clone(),
                    false => format!("{name}.{k}"),
                };
                flatten(&n, x, skip, out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{name}[{i}]"), x, skip, out);
            }
        }
        _ => out.push(format!("{name} = {v}")),
    }
}

/// `name` without its `[i]` list indices.
fn without_indices(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut inside = false;
    for c in name.chars() {
        match c {
            '[' => inside = true,
            ']' => inside = false,
            _ if !inside => out.push(c),
            _ => {}
        }
    }
    out
}

/// Settles a legacy tool's checks with the other ranks: `checked` is what
/// this rank found, `options` what it was given (None when it could not
/// read them). With one process, `checked` as it is. Under MPI, the run
/// goes on (with what was checked) only when every rank was given the
/// same options and passed; otherwise rank 0 says why, every rank waits
/// until it has, and all end with the same status: the caller drops
/// `world` as it returns the halt (its finalisation bounded here).
pub fn settle<T>(
    prog: &str,
    world: &World,
    options: Option<&[String]>,
    checked: Result<T, NotStarted>,
) -> Result<T, Halt> {
    let t = world.transport();
    if t.size() == 1 {
        return checked.map_err(|e| e.halt(prog));
    }
    let refusal = checked.as_ref().err().map(|e| Refusal {
        status: match e.failure {
            Some(_) => crate::exit::FAILED,
            None => crate::exit::USAGE,
        },
        message: e.msg.clone(),
    });
    let verdict = agree(&*t, &Ready { options, refusal });
    let status = verdict.status();
    let Some(message) = explain(prog, &verdict) else {
        return checked.map_err(|e| e.halt(prog));
    };
    if t.rank() == 0 {
        iolab_core::say!("{message}");
    }
    // No rank ends before rank 0 has said it: mpirun may kill the job as
    // the first rank exits non-zero, taking rank 0's words with it.
    t.barrier();
    drop(checked);
    crate::signals::bound_mpi_finalize(status);
    Err(Halt::said(match status {
        crate::exit::USAGE => HaltKind::Usage,
        _ => HaltKind::Failed,
    }))
}

/// What rank 0 says of a verdict that stops the run; None for `Go`.
fn explain(prog: &str, v: &Verdict) -> Option<String> {
    let line = |l: &Option<String>| match l {
        Some(l) => format!("`{l}`"),
        None => "nothing".to_string(),
    };
    match v {
        Verdict::Go => None,
        Verdict::Refused {
            rank: 0, refusal, ..
        } => Some(format!("{prog}: {}", refusal.message)),
        Verdict::Refused {
            rank,
            host,
            refusal,
        } => Some(format!("{prog}: rank {rank} ({host}): {}", refusal.message)),
        Verdict::Differ {
            reference,
            rank,
            host,
            ours,
            theirs,
        } => Some(format!(
            "{prog}: the ranks were not given the same options: rank {rank} ({host}) has {} where rank {reference} has {}; give every rank the same command line (and the same input files); nothing was run",
            line(theirs),
            line(ours)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Inner {
        block: u64,
        json: Option<String>,
    }

    #[derive(serde::Serialize)]
    struct Outer {
        tests: Vec<Inner>,
        name: &'static str,
        empty: Vec<u8>,
    }

    #[test]
    fn options_flatten_to_named_lines_without_the_skipped() {
        let v = Outer {
            tests: vec![
                Inner {
                    block: 4,
                    json: Some("a".into()),
                },
                Inner {
                    block: 5,
                    json: None,
                },
            ],
            name: "x",
            empty: vec![],
        };
        let lines = option_lines(&v, &["tests.json"]);
        assert_eq!(
            lines,
            vec![
                "empty = []",
                "name = \"x\"",
                "tests[0].block = 4",
                "tests[1].block = 5"
            ]
        );
    }

    #[test]
    fn a_difference_names_both_ranks_and_the_line() {
        let v = Verdict::Differ {
            reference: 0,
            rank: 1,
            host: "n1".into(),
            ours: Some("items_asked = 5".into()),
            theirs: Some("items_asked = 4".into()),
        };
        let said = explain("mdtest", &v).unwrap();
        assert!(
            said.contains("rank 1 (n1) has `items_asked = 4` where rank 0 has `items_asked = 5`"),
            "{said}"
        );
        let r = Verdict::Refused {
            rank: 1,
            host: "n1".into(),
            refusal: Refusal {
                status: 2,
                message: "-d x: is not writable".into(),
            },
        };
        assert_eq!(
            explain("mdtest", &r).unwrap(),
            "mdtest: rank 1 (n1): -d x: is not writable"
        );
        assert_eq!(explain("mdtest", &Verdict::Go), None);
    }
}
