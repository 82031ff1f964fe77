//! Why a run cannot be submitted (IO500's `[INVALID]`).

use crate::config::Config;
use crate::phase::Phase;
use crate::results::{Detail, PhaseReport};

/// The reasons, empty for a valid run (the 12 scored phases; extended
/// ones do not make the standard run invalid, as in the io500 app).
pub fn reasons(cfg: &Config, reports: &[PhaseReport]) -> Vec<String> {
    reasons_of(cfg, reports, false)
}

/// The reasons the extended run (`[SCOREX]`) is invalid: those of
/// [`reasons`] and those of the extended phases.
pub fn reasons_extended(cfg: &Config, reports: &[PhaseReport]) -> Vec<String> {
    reasons_of(cfg, reports, true)
}

fn reasons_of(cfg: &Config, reports: &[PhaseReport], extended: bool) -> Vec<String> {
    let mut out = global_reasons(cfg);
    let counted: Vec<&PhaseReport> = reports
        .iter()
        .filter(|r| extended || !r.phase.is_extended())
        .collect();
    for r in &counted {
        out.extend(phase_reasons(cfg, r));
    }
    let expected = match extended {
        true => Phase::EXTENDED.len(),
        false => Phase::ALL.len(),
    };
    if counted.len() < expected {
        out.push("not every phase was reported".into());
    }
    out
}

/// What makes every phase of the run invalid, known before it starts.
pub fn global_reasons(cfg: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let min = cfg.min_write_s();
    if cfg.stonewall_s < min {
        out.push(format!(
            "stonewall-time is {} s, below the {min} s the rules ask for",
            cfg.stonewall_s
        ));
    }
    if let Some(d) = &cfg.pause_dir {
        out.push(format!("[debug] pause-dir is set ({})", d.display()));
    }
    if let Some(k) = cfg.mdtest_hard_files_per_dir {
        out.push(format!("[mdtest-hard] files-per-dir is set ({k})"));
    }
    out
}

/// What makes one phase invalid.
pub fn phase_reasons(cfg: &Config, r: &PhaseReport) -> Vec<String> {
    let min = cfg.min_write_s();
    match &r.detail {
        Detail::Skipped(why) => vec![format!("{} did not run: {why}", r.name)],
        Detail::Failed(why) => vec![format!("{} failed: {why}", r.name)],
        Detail::Interrupted => vec![format!("{} was interrupted", r.name)],
        Detail::Find(f) if f.found == 0 => vec![format!("{} found no file", r.name)],
        Detail::Ior(i) if i.errors > 0 => vec![format!(
            "Errors ({}) occurred during {} in IOR: what was read differs from what was written (first at {})",
            i.errors,
            r.name,
            i.first_error.as_deref().unwrap_or("an unknown offset")
        )],
        Detail::Mdworkbench(m)
            if r.phase == Phase::MdworkbenchBench
                && m.iterations.len() as u64 != crate::mdworkbench::ITERATIONS =>
        {
            vec![format!(
                "{} ran {} iterations, not {}",
                r.name,
                m.iterations.len(),
                crate::mdworkbench::ITERATIONS
            )]
        }
        Detail::Mdworkbench(_) if r.score <= 0.0 => {
            vec![format!("{} scored 0 (no operation done)", r.name)]
        }
        _ if r.phase.is_write() && r.time_s < min as f64 => vec![format!(
            "{} ran {:.3} s, below the {min} s a write phase must last",
            r.name, r.time_s
        )],
        _ => Vec::new(),
    }
}

/// Whether a phase's `[RESULT]` line carries `[INVALID]`.
pub fn phase_invalid(cfg: &Config, r: &PhaseReport) -> bool {
    !global_reasons(cfg).is_empty() || !phase_reasons(cfg, r).is_empty()
}
