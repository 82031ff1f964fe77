//! `lst stat`'s blocks, as LNet's lst prints them for each interval:
//!
//! ```text
//! [LNet Rates of servers]
//! [R] Avg: 3253     RPC/s Min: 3253     RPC/s Max: 3253     RPC/s
//! [W] Avg: 3253     RPC/s Min: 3253     RPC/s Max: 3253     RPC/s
//! [LNet Bandwidth of servers]
//! [R] Avg: 12.71    MiB/s Min: 12.71    MiB/s Max: 12.71    MiB/s
//! [W] Avg: 0.00     MiB/s Min: 0.00     MiB/s Max: 0.00     MiB/s
//! ```
//!
//! with lines and figures left out as `--bw`, `--rate`, `--read`,
//! `--write`, `--avg`, `--min` and `--max` select, and MB/s for `--mbs`.

use iolab_lst::result::Spread;
use iolab_lst::stat::GroupRates;
use std::fmt::Write;

/// What `lst stat`'s options select (each pair: neither given means both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Select {
    /// The rates block.
    pub rate: bool,
    /// The bandwidth block.
    pub bw: bool,
    /// `[R]` lines.
    pub read: bool,
    /// `[W]` lines.
    pub write: bool,
    /// Avg figures.
    pub avg: bool,
    /// Min figures.
    pub min: bool,
    /// Max figures.
    pub max: bool,
    /// Bandwidth in MB/s (10^6) instead of MiB/s.
    pub mbs: bool,
}

impl Default for Select {
    fn default() -> Self {
        Select {
            rate: true,
            bw: true,
            read: true,
            write: true,
            avg: true,
            min: true,
            max: true,
            mbs: false,
        }
    }
}

/// The blocks of one interval, every group in order.
pub fn render(groups: &[GroupRates], sel: &Select) -> String {
    let mut out = String::new();
    for g in groups {
        // As lst: the nodes that did not answer are counted, and a group
        // none of whose nodes gave a rate prints no block.
        if g.failed > 0 {
            let _ = writeln!(out, "Failed to stat on {} nodes", g.failed);
        }
        if g.nodes == 0 {
            continue;
        }
        if sel.rate {
            let _ = writeln!(out, "[LNet Rates of {}]", g.name);
            pair(
                &mut out,
                sel,
                (&g.r_rpc_per_s, &g.w_rpc_per_s),
                1.0,
                "RPC/s",
                0,
            );
        }
        if sel.bw {
            let _ = writeln!(out, "[LNet Bandwidth of {}]", g.name);
            let (scale, unit) = if sel.mbs {
                (1e6, "MB/s")
            } else {
                (1048576.0, "MiB/s")
            };
            pair(
                &mut out,
                sel,
                (&g.r_bytes_per_s, &g.w_bytes_per_s),
                scale,
                unit,
                2,
            );
        }
    }
    out
}

fn pair(
    out: &mut String,
    sel: &Select,
    (r, w): (&Spread, &Spread),
    scale: f64,
    unit: &str,
    prec: usize,
) {
    if sel.read {
        line(out, sel, "R", r, scale, unit, prec);
    }
    if sel.write {
        line(out, sel, "W", w, scale, unit, prec);
    }
}

fn line(out: &mut String, sel: &Select, rw: &str, s: &Spread, scale: f64, unit: &str, prec: usize) {
    let mut parts = Vec::new();
    for (on, name, v) in [
        (sel.avg, "Avg", s.avg),
        (sel.min, "Min", s.min),
        (sel.max, "Max", s.max),
    ] {
        if on {
            parts.push(format!("{name}: {:<8.prec$} {unit}", v / scale));
        }
    }
    let _ = writeln!(out, "[{rw}] {}", parts.join(" "));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates() -> GroupRates {
        let s = |v: f64| Spread {
            avg: v,
            min: v,
            max: v,
        };
        GroupRates {
            name: "servers".into(),
            r_rpc_per_s: s(3253.0),
            w_rpc_per_s: s(3253.0),
            r_bytes_per_s: s(3253.0 * 4096.0),
            w_bytes_per_s: s(0.0),
            nodes: 1,
            failed: 0,
        }
    }

    #[test]
    fn the_layout_is_lsts() {
        let t = render(&[rates()], &Select::default());
        assert_eq!(
            t,
            "[LNet Rates of servers]\n\
             [R] Avg: 3253     RPC/s Min: 3253     RPC/s Max: 3253     RPC/s\n\
             [W] Avg: 3253     RPC/s Min: 3253     RPC/s Max: 3253     RPC/s\n\
             [LNet Bandwidth of servers]\n\
             [R] Avg: 12.71    MiB/s Min: 12.71    MiB/s Max: 12.71    MiB/s\n\
             [W] Avg: 0.00     MiB/s Min: 0.00     MiB/s Max: 0.00     MiB/s\n"
        );
    }

    #[test]
    fn nodes_that_did_not_answer_are_counted_and_an_empty_group_has_no_block() {
        let sel = Select {
            bw: false,
            ..Select::default()
        };
        let mut g = rates();
        g.failed = 2;
        let t = render(&[g.clone()], &sel);
        assert!(
            t.starts_with("Failed to stat on 2 nodes\n[LNet Rates of servers]\n"),
            "{t}"
        );
        g.nodes = 0;
        assert_eq!(render(&[g], &sel), "Failed to stat on 2 nodes\n");
    }

    #[test]
    fn options_select_lines_and_figures() {
        let sel = Select {
            rate: false,
            write: false,
            min: false,
            max: false,
            mbs: true,
            ..Select::default()
        };
        assert_eq!(
            render(&[rates()], &sel),
            "[LNet Bandwidth of servers]\n[R] Avg: 13.32    MB/s\n"
        );
    }
}
