//! The io500 app's output: the `[RESULT]` and `[SCORE ]` lines (stdout
//! and result_summary.txt), result.txt (the ini echo and each phase's
//! details) and the `--dry-run` listing; and the run's headline figures.

use iolab_core::stats::Percentiles;
use iolab_io500::mdworkbench::MdwbResult;
use iolab_io500::phase::Group;
use iolab_io500::results::{Detail, Io500Payload, PhaseReport, Score};

const INVALID: &str = " [INVALID]";

/// The run's headline figures: each phase's score (`score`, in GiB/s or
/// kIOPS as the phase has it), unscoped, as the store indexes them.
pub fn figures(p: &Io500Payload) -> Vec<iolab_results::Figure> {
    p.phases
        .iter()
        .map(|r| iolab_results::Figure {
            phase: r.name.clone(),
            metric: "score".into(),
            unit: r.unit.clone(),
            scope: String::new(),
            stat: iolab_results::Spread::one(r.score),
        })
        .collect()
}

/// One `[RESULT]` line, as the io500 app prints it (`[      ]` for a
/// phase that is not scored, ior-rnd4K-easy-read).
pub fn result_line(r: &PhaseReport, invalid: bool) -> String {
    let tag = match r.phase.group() {
        Group::Unscored => "[      ]",
        _ => "[RESULT]",
    };
    format!(
        "{tag} {:>20} {:>15.6} {} : time {:.3} seconds{}\n",
        r.name,
        r.score,
        r.unit,
        r.time_s,
        if invalid { INVALID } else { "" }
    )
}

/// The `[SCORE ]` line.
pub fn score_line(s: &Score, valid: bool) -> String {
    score_line_tagged("[SCORE ]", s, valid)
}

/// The `[SCOREX]` line of extended mode, when the run has one.
pub fn scorex_line(p: &Io500Payload) -> Option<String> {
    let s = p.score_extended.as_ref()?;
    Some(score_line_tagged(
        "[SCOREX]",
        s,
        p.valid_extended.unwrap_or(false),
    ))
}

fn score_line_tagged(tag: &str, s: &Score, valid: bool) -> String {
    format!(
        "{tag} Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}{}\n",
        s.bandwidth,
        s.iops,
        s.total,
        if valid { "" } else { INVALID }
    )
}

/// result_summary.txt: every `[RESULT]` line, then the score line.
/// `invalid[i]` marks phase i.
pub fn summary(p: &Io500Payload, invalid: &[bool]) -> String {
    let mut s = String::new();
    for (i, r) in p.phases.iter().enumerate() {
        s.push_str(&result_line(r, invalid.get(i).copied().unwrap_or(true)));
    }
    s.push_str(&score_line(&p.score, p.valid));
    s.push_str(&scorex_line(p).unwrap_or_default());
    s
}

/// result.txt: the ini as given, then each phase's command and figures,
/// then the score and why the run is invalid.
pub fn result_txt(p: &Io500Payload, ini_text: &str) -> String {
    // The opening a rerun reads to know the results as iolab's.
    let mut s = iolab_io500::resultdir::ini_as_comments(ini_text);
    s.push_str(&format!(
        "datadir = {}\nresultdir = {}\ncommunicator = {}\nranks = {}\ntasks-per-rank = {}\ntasks = {}\n",
        p.datadir, p.resultdir, p.comm.kind, p.comm.ranks, p.comm.tasks_per_rank, p.comm.tasks
    ));
    for r in &p.phases {
        s.push_str(&phase_block(r));
    }
    s.push_str(&format!(
        "\n[SCORE]\nBW = {:.6}\nMD = {:.6}\nSCORE = {:.6}\nvalid = {}\n",
        p.score.bandwidth, p.score.iops, p.score.total, p.valid
    ));
    for why in &p.invalid_reasons {
        s.push_str(&format!("invalid = {why}\n"));
    }
    if let (Some(x), Some(valid)) = (&p.score_extended, p.valid_extended) {
        s.push_str(&format!(
            "\n[SCOREX]\nBW = {:.6}\nMD = {:.6}\nSCORE = {:.6}\nvalid = {valid}\n",
            x.bandwidth, x.iops, x.total
        ));
    }
    s
}

fn phase_block(r: &PhaseReport) -> String {
    let mut s = format!(
        "\n[{}]\nexe = {}\nscore = {:.6}\nunit = {}\nt_delta = {:.4}\n",
        r.name, r.command, r.score, r.unit, r.time_s
    );
    match &r.detail {
        Detail::Ior(i) => {
            s.push_str(&format!(
                "bytes = {}\nfile-bytes = {}\ntransfer-size = {}\ntransfers-per-task = {}\nelapsed = {:.6}\nstonewall-hit = {}\n",
                i.bytes, i.file_bytes, i.transfer_bytes, i.transfers_per_task, i.elapsed_s, i.stonewall_hit
            ));
            // A read has no wall: it reads the write's count.
            if let Some(n) = i.min_at_wall {
                s.push_str(&format!("min-transfers-at-stonewall = {n}\n"));
            }
        }
        Detail::Mdtest(m) => s.push_str(&format!(
            "items = {}\nitems-per-task = {}\nelapsed = {:.6}\nrate = {:.3}\nstonewall-hit = {}\n",
            m.items, m.items_per_task, m.elapsed_s, m.rate, m.stonewall_hit
        )),
        Detail::Find(f) => s.push_str(&format!(
            "found = {}\ntotal-files = {}\nelapsed = {:.6}\n",
            f.found, f.total, f.elapsed_s
        )),
        Detail::Mdworkbench(m) => s.push_str(&mdworkbench_block(m)),
        Detail::Skipped(why) => s.push_str(&format!("skipped = {why}\n")),
        Detail::Failed(why) => s.push_str(&format!("failed = {why}\n")),
        Detail::Interrupted => s.push_str("interrupted = stopped by Ctrl-C or SIGTERM\n"),
    }
    s
}

/// An md-workbench phase's figures: its sizing as the app prints it,
/// then each iteration's counts, time, rate and longest operation (the
/// app's `maxOpTime`; `scoreIteration0` for the benchmark's first).
fn mdworkbench_block(m: &MdwbResult) -> String {
    let mut s = format!(
        "filesPerProc = {}\nprecreatePerSet = {}\nsets-per-task = {}\ntasks = {}\n",
        m.files_per_proc, m.precreate_per_set, m.sets, m.tasks
    );
    let n = m.iterations.len();
    for (i, f) in m.iterations.iter().enumerate() {
        // The scored iteration (the last) unprefixed, as the app.
        let k = match i + 1 == n {
            true => String::new(),
            false => format!("iteration{i}-"),
        };
        s.push_str(&format!(
            "{k}dsets-created = {}\n{k}dsets-deleted = {}\n{k}objects-created = {}\n{k}objects-stated = {}\n{k}objects-read = {}\n{k}objects-deleted = {}\n{k}bytes-written = {}\n{k}bytes-read = {}\n{k}elapsed = {:.6}\n{k}rate = {:.3}\n",
            f.dsets_created, f.dsets_deleted, f.objects_created, f.objects_stated, f.objects_read,
            f.objects_deleted, f.bytes_written, f.bytes_read, f.elapsed_s, f.ops_per_sec
        ));
        let l = &f.latency;
        for (op, p) in [
            ("stat", l.stat),
            ("read", l.read),
            ("delete", l.delete),
            ("create", l.create),
        ] {
            if let Some(p) = p {
                s.push_str(&latency_line(&k, op, &p));
            }
        }
        match i + 1 == n {
            true => s.push_str(&format!("maxOpTime = {:.6}\n", f.max_op_s)),
            false => s.push_str(&format!(
                "scoreIteration{i} = {:.6}\nmaxOpTime{i} = {:.6}\n",
                f.ops_per_sec / 1000.0,
                f.max_op_s
            )),
        }
    }
    s
}

/// One operation's latencies in seconds, as md-workbench prints them
/// (`%.4e`): count, min, median, 90th, 99th percentile, max.
fn latency_line(prefix: &str, op: &str, p: &Percentiles) -> String {
    let sec = |ns: u64| ns as f64 / 1e9;
    format!(
        "{prefix}latency-{op} = count:{} min:{:.4e}s p50:{:.4e}s p90:{:.4e}s p99:{:.4e}s max:{:.4e}s\n",
        p.count,
        sec(p.min_ns),
        sec(p.p50_ns),
        sec(p.p90_ns),
        sec(p.p99_ns),
        sec(p.max_ns)
    )
}

/// What `--dry-run` prints: each phase and its equivalent command, or
/// (as an ini comment, no `exe` line) why the run would not run it.
pub fn dry_run(commands: &[(String, Result<String, String>)]) -> String {
    commands
        .iter()
        .map(|(name, cmd)| match cmd {
            Ok(cmd) => format!("[{name}]\nexe = {cmd}\n\n"),
            Err(why) => format!("[{name}]\n; not run: {why}\n\n"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_io500::Phase;

    #[test]
    fn lines_have_the_io500_app_s_shape() {
        let r = PhaseReport {
            phase: Phase::IorEasyWrite,
            name: "ior-easy-write".into(),
            score: 1.5,
            unit: "GiB/s".into(),
            time_s: 301.25,
            command: String::new(),
            detail: Detail::Skipped(String::new()),
        };
        assert_eq!(
            result_line(&r, true),
            "[RESULT]       ior-easy-write        1.500000 GiB/s : time 301.250 seconds [INVALID]\n"
        );
        let s = Score {
            bandwidth: 1.0,
            iops: 4.0,
            total: 2.0,
        };
        assert_eq!(
            score_line(&s, true),
            "[SCORE ] Bandwidth 1.000000 GiB/s : IOPS 4.000000 kiops : TOTAL 2.000000\n"
        );
    }
}
