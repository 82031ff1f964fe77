//! Which I/O path a target takes ([`crate::run::iopath`]): chosen once per
//! target, here and nowhere else, from its options and what its backend
//! can do. This is the one file that knows every path.

use crate::parse::values::{EngineKind, Op};
use crate::plan::TargetPlan;
use crate::run::iopath::{IoPath, NullPath, SyncPath, UringPath};

/// The path for a target: the one place that looks at `-engine` and
/// `-op noop`.
pub fn choose(plan: &TargetPlan) -> &'static dyn IoPath {
    use crate::e2e::opts::Role;
    match plan.opts.e2e.role() {
        Some(Role::Source) => return &crate::e2e::SourcePath,
        Some(Role::Destination) => return &crate::e2e::DestinationPath,
        None => {}
    }
    match (plan.opts.engine, plan.opts.op) {
        // A ring of NOPs still measures the ring.
        (EngineKind::Uring, _) => &UringPath,
        (_, Op::Noop) => &NullPath,
        _ => &SyncPath,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse, Parsed};

    fn path_of(line: &str) -> (&'static str, usize) {
        let args: Vec<String> = line.split(' ').map(String::from).collect();
        let Ok(Parsed::Run(c)) = parse(&args) else {
            panic!("{line}")
        };
        let p = crate::plan::plan(&c).unwrap();
        let io = choose(&p.targets[0]);
        (io.name(), io.threads(p.targets[0].opts.queuedepth))
    }

    #[test]
    fn one_place_picks_the_path() {
        let base = "-target f -reqsize 1 -numreqs 8 -qd 4";
        assert_eq!(path_of(&format!("-op read {base}")), ("sync", 4));
        assert_eq!(path_of(&format!("-op noop {base}")), ("null", 4));
        assert_eq!(
            path_of(&format!("-op read {base} -engine uring")),
            ("uring", 1)
        );
        assert_eq!(path_of("-op write -target null -numreqs 8").0, "sync");
    }

    #[test]
    fn targets_are_judged_by_what_their_backend_can_do() {
        let plan_of = |line: &str| {
            let args: Vec<String> = line.split(' ').map(String::from).collect();
            let Ok(Parsed::Run(c)) = parse(&args) else {
                panic!("{line}")
            };
            crate::plan::plan(&c).unwrap().targets.remove(0)
        };
        let null = plan_of("-op write -target null -numreqs 8");
        assert!(null.caps.discards && !null.caps.raw_fd && !null.caps.local);
        let file = plan_of("-op write -target f -numreqs 8");
        assert!(!file.caps.discards && file.caps.raw_fd && file.caps.local);
        assert!(!file.caps.whole_object_writes);
        // io_uring is refused where the backend has no file descriptor.
        let args: Vec<String> = "-op write -target null -numreqs 8 -engine uring"
            .split(' ')
            .map(String::from)
            .collect();
        let Err(e) = parse(&args) else {
            panic!("uring on null was accepted")
        };
        assert!(e.to_string().contains("file descriptor"), "{e}");
    }
}
