//! `iolab qualify`'s verdict: the terminal tables (`text`) and the
//! report page with each layer's curves and the chain of limits
//! (`html`).

pub mod html;
pub mod text;

use iolab_qualify::verdict::Limit;

/// A limit as a table shows it: the mean in its unit (3 significant
/// digits with an SI prefix) and the repeats' relative standard
/// deviation, `1.21 GiB/s ±3%`.
pub fn limit_text(l: &Limit) -> String {
    let rsd = match l.value.mean {
        m if m > 0.0 && l.value.n > 1 => format!(" ±{:.0}%", 100.0 * l.value.std_dev / m),
        _ => String::new(),
    };
    format!("{} {}{rsd}", crate::ticks::si(l.value.mean), l.unit)
}

/// The efficiencies against the layer below: `78% of network.brw_write`.
pub fn below_text(l: &Limit) -> String {
    l.efficiency
        .iter()
        .map(|e| format!("{:.0}% of {}", 100.0 * e.ratio, e.against))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Against the baseline: `103%`, with ` (differs)` when beyond the spread.
pub fn baseline_text(l: &Limit) -> String {
    match &l.baseline {
        Some(b) if b.flagged => format!("{:.0}% (differs)", b.percent),
        Some(b) => format!("{:.0}%", b.percent),
        None => String::new(),
    }
}
