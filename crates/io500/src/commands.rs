//! The command lines of the phases: the mdtest arguments iolab's
//! mdtest engine runs, and what each phase runs as IO500 would print
//! it. Apart from [`crate::phase`] because they read the configuration,
//! which itself names the phases.

use crate::config::{Config, HARD_FILE_BYTES};
use crate::phase::{Layout, Phase};

/// mdtest's arguments for an mdtest phase (without the program name),
/// as IO500 passes them: these are run by iolab's mdtest engine.
pub fn mdtest_args(cfg: &Config, l: &Layout, phase: Phase, tasks_per_process: u64) -> Vec<String> {
    let base = phase.base_section();
    let dir = l.path(base);
    let mut a: Vec<String> = Vec::new();
    let mut push = |s: &str| a.push(s.to_string());
    match base {
        "mdtest-easy" => {
            push("-n");
            push(&cfg.mdtest_easy_n.to_string());
            for s in ["-u", "-L", "-F", "-P", "-G", "270669", "-N", "1"] {
                push(s);
            }
        }
        _ => {
            push("-n");
            push(&cfg.mdtest_hard_n.to_string());
            if let Some(k) = cfg.mdtest_hard_files_per_dir {
                push(&format!("-I={k}"));
            }
            let bytes = HARD_FILE_BYTES.to_string();
            for s in [
                "-t", "-w", &bytes, "-e", &bytes, "-P", "-G", "270670", "-N", "1", "-F",
            ] {
                push(s);
            }
        }
    }
    push("-d");
    push(&dir.display().to_string());
    push("-x");
    push(&l.stonewall_file(base).display().to_string());
    match phase {
        Phase::MdtestEasyWrite | Phase::MdtestHardWrite => {
            // -Y: the app's sync after the creates, inside the timed phase.
            push("-C");
            push("-Y");
            push("-W");
            push(&cfg.stonewall_s.to_string());
        }
        Phase::MdtestEasyStat | Phase::MdtestHardStat => push("-T"),
        // -X: the app's check of the data read.
        Phase::MdtestHardRead => {
            push("-E");
            push("-X");
        }
        _ => push("-r"),
    }
    push("-a");
    push(cfg.api(phase));
    push("--tasks");
    push(&tasks_per_process.to_string());
    if let Some(qd) = cfg.md_queue_depth {
        for s in ["--engine", "uring", "--qd", &qd.to_string()] {
            push(s);
        }
    }
    a
}

/// What each phase runs, as a command line: `iolab mdtest ...` for the
/// mdtest phases and `iolab ior ...` for the data phases (runnable as
/// printed; a read's transfer count, N, is what the write made), and the
/// pfind command line IO500 would run for the phases iolab's own find
/// engine does.
pub fn equivalent_command(
    cfg: &Config,
    l: &Layout,
    phase: Phase,
    tasks_per_process: u64,
) -> String {
    let d = |n: &str| l.path(n).display().to_string();
    match phase {
        Phase::IorEasyWrite | Phase::IorEasyRead | Phase::IorHardWrite | Phase::IorHardRead => {
            ior_command(cfg, l, phase, None, tasks_per_process)
        }
        Phase::Find => format!(
            "pfind {} -newer {} -size {HARD_FILE_BYTES}c -name *01* (iolab io500's find engine)",
            l.datadir.display(),
            l.timestamp_file().display()
        ),
        Phase::FindEasy => format!(
            "pfind {} -name *01* (iolab io500's find engine)",
            d("mdtest-easy")
        ),
        Phase::FindHard => format!(
            "pfind {} -newer {} -size {HARD_FILE_BYTES}c -name *01* (iolab io500's find engine)",
            d("mdtest-hard"),
            l.timestamp_file().display()
        ),
        Phase::IorRnd4kEasyRead => {
            crate::ior::spec(cfg, l, phase).command(crate::ior::Access::Random, tasks_per_process)
        }
        Phase::MdworkbenchCreate | Phase::MdworkbenchBench | Phase::MdworkbenchDelete => {
            mdworkbench_command(cfg, l, phase, cfg.mdworkbench.sizing)
        }
        _ => {
            let args = mdtest_args(cfg, l, phase, tasks_per_process);
            let words: Vec<String> = args.iter().map(|a| crate::ior::shell_word(a)).collect();
            format!("iolab mdtest {}", words.join(" "))
        }
    }
}

/// The `iolab ior` command line of ior-easy's or ior-hard's write or
/// read; a read's transfer count is `read_count`, the count its write
/// made, or `N` while that is not known (a dry run).
pub fn ior_command(
    cfg: &Config,
    l: &Layout,
    phase: Phase,
    read_count: Option<u64>,
    tasks_per_process: u64,
) -> String {
    let spec = crate::ior::spec(cfg, l, phase);
    let access = crate::ior::access_of(phase, read_count);
    let cmd = spec.command(access, tasks_per_process);
    match (access, read_count) {
        (crate::ior::Access::Read(_), None) => cmd.replace(
            "stoneWallingWearOutIterations=0",
            "stoneWallingWearOutIterations=N",
        ),
        _ => cmd,
    }
}

/// The md-workbench command line the io500 app runs for an md-workbench
/// phase; `sizing` is (`-P`, `-I`) when known (given by the ini, or
/// sized once mdtest-easy-write ran).
pub fn mdworkbench_command(
    cfg: &Config,
    l: &Layout,
    phase: Phase,
    sizing: Option<(u64, u64)>,
) -> String {
    use crate::mdworkbench::{ITERATIONS, OFFSET, SEED, SETS};
    let sizes = match sizing {
        Some((p, i)) => format!("-P={p} -I={i}"),
        None => format!(
            "-P=N -I=N (N = mdtest-easy-write's rate x {} s / tasks / {SETS})",
            cfg.stonewall_s.min(60)
        ),
    };
    let which = match phase {
        Phase::MdworkbenchCreate => "-1".to_string(),
        Phase::MdworkbenchBench => format!("-2 -R={ITERATIONS} -X"),
        _ => "-3".to_string(),
    };
    // md-workbench has no such option: said beside the app's line.
    let engine = match cfg.md_queue_depth {
        Some(qd) => format!(", --engine uring --qd {qd}: {qd} objects in flight per task"),
        None => String::new(),
    };
    format!(
        "md-workbench -a {} -o={} -t={:.6} -O={OFFSET} -D={SETS} -G={SEED} {sizes} {which} (iolab io500's md-workbench engine{engine})",
        cfg.api(phase).to_ascii_uppercase(),
        l.path(crate::mdworkbench::DIR).display(),
        cfg.mdworkbench.waiting_factor,
    )
}
