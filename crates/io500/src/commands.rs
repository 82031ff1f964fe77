//! The command lines of the phases: the mdtest arguments iolab's
//! mdtest engine runs, and what each phase runs as IO500 would print
//! it. Apart from [`crate::phase`] because they read the configuration,
//! which itself names the phases.

use crate::config::{Config, HARD_FILE_BYTES, HARD_TRANSFER};
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
            push("-C");
            push("-W");
            push(&cfg.stonewall_s.to_string());
        }
        Phase::MdtestEasyStat | Phase::MdtestHardStat => push("-T"),
        Phase::MdtestHardRead => push("-E"),
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
/// mdtest phases (runnable as printed), and the IOR and pfind command
/// lines IO500 would run for the phases iolab's own data and find engines
/// do (they have no iolab command of their own).
pub fn equivalent_command(
    cfg: &Config,
    l: &Layout,
    phase: Phase,
    tasks_per_process: u64,
) -> String {
    let d = |n: &str| l.path(n).display().to_string();
    let sw = cfg.stonewall_s;
    match phase {
        Phase::IorEasyWrite | Phase::IorEasyRead => {
            let e = &cfg.ior_easy;
            let rw = match phase {
                Phase::IorEasyWrite => format!("-w -D {sw} -O stoneWallingWearOut=1"),
                _ => "-r -R".into(),
            };
            format!(
                "ior -C -Q 1 -g -G 271 -k -e -o {}/ior_file_easy -t {} -b {}{}{} {rw} (iolab io500's data engine)",
                d("ior-easy"),
                e.transfer_bytes,
                e.block_bytes,
                if e.file_per_proc { " -F" } else { "" },
                if e.unique_dir { " -u" } else { "" },
            )
        }
        Phase::IorHardWrite | Phase::IorHardRead => {
            let rw = match phase {
                Phase::IorHardWrite => format!("-w -D {sw} -O stoneWallingWearOut=1"),
                _ => "-r -R".into(),
            };
            format!(
                "ior -C -Q 1 -g -G 27 -k -e -o {}/file -t {HARD_TRANSFER} -b {HARD_TRANSFER} -s {} {rw} (iolab io500's data engine)",
                d("ior-hard"),
                cfg.ior_hard_segments
            )
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
            let e = &cfg.ior_easy;
            format!(
                "ior -C -Q 1 -g -G 271 -k -e -o {}/ior_file_easy{}{} -r -D {sw} -z -t 4096 -b 4096 -s {} -O stoneWallingWearOut=1 (iolab io500's data engine)",
                d("ior-easy"),
                if e.file_per_proc { " -F" } else { "" },
                if e.unique_dir { " -u" } else { "" },
                crate::ior::RND_MAX_TRANSFERS,
            )
        }
        Phase::MdworkbenchCreate | Phase::MdworkbenchBench | Phase::MdworkbenchDelete => {
            mdworkbench_command(cfg, l, phase, cfg.mdworkbench.sizing)
        }
        _ => {
            let args = mdtest_args(cfg, l, phase, tasks_per_process);
            format!("iolab mdtest {}", args.join(" "))
        }
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
    format!(
        "md-workbench -a {} -o={} -t={:.6} -O={OFFSET} -D={SETS} -G={SEED} {sizes} {which} (iolab io500's md-workbench engine)",
        cfg.api(phase).to_ascii_uppercase(),
        l.path(crate::mdworkbench::DIR).display(),
        cfg.mdworkbench.waiting_factor,
    )
}
