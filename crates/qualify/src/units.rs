//! Units in figure names. A name alone is its figure in the canonical
//! unit of its kind (GiB/s, ops/s); a suffix asks for another unit:
//! `network.brw_write_gib_s`, `data.write_mb_s`, `metadata.create_kops_s`.
//! Where each operation moves a fixed number of bytes (brw RPCs, xdd
//! requests) a rate may be asked for as a bandwidth and back:
//! `network.brw_write_4k_mib_s`, `data.write_iops`.

use crate::curves::Kind;

/// A unit a name may end in: its suffix, kind, how many of it make one
/// canonical unit, and how it is written.
struct Suffix {
    suffix: &'static str,
    kind: Kind,
    per_canonical: f64,
    unit: &'static str,
}

const GIB: f64 = (1u64 << 30) as f64;

const SUFFIXES: [Suffix; 8] = [
    Suffix {
        suffix: "_gib_s",
        kind: Kind::Bandwidth,
        per_canonical: 1.0,
        unit: "GiB/s",
    },
    Suffix {
        suffix: "_mib_s",
        kind: Kind::Bandwidth,
        per_canonical: 1024.0,
        unit: "MiB/s",
    },
    Suffix {
        suffix: "_gb_s",
        kind: Kind::Bandwidth,
        per_canonical: GIB / 1e9,
        unit: "GB/s",
    },
    Suffix {
        suffix: "_mb_s",
        kind: Kind::Bandwidth,
        per_canonical: GIB / 1e6,
        unit: "MB/s",
    },
    Suffix {
        suffix: "_kops_s",
        kind: Kind::Rate,
        per_canonical: 1e-3,
        unit: "kops/s",
    },
    Suffix {
        suffix: "_ops_s",
        kind: Kind::Rate,
        per_canonical: 1.0,
        unit: "ops/s",
    },
    Suffix {
        suffix: "_rpc_s",
        kind: Kind::Rate,
        per_canonical: 1.0,
        unit: "RPC/s",
    },
    Suffix {
        suffix: "_iops",
        kind: Kind::Rate,
        per_canonical: 1.0,
        unit: "IOPS",
    },
];

/// What a base name stands for: its value in the canonical unit of its
/// kind, and the bytes per operation when fixed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Base {
    /// The value.
    pub value: f64,
    /// Its kind.
    pub kind: Kind,
    /// Bytes per operation.
    pub bytes_per_op: Option<f64>,
}

/// The value of `name` in the unit its suffix asks for: `base` looks a
/// name without suffix up (None: no such figure). The error names what
/// is wrong and what may be written instead.
pub fn resolve(
    name: &str,
    base: &dyn Fn(&str) -> Option<Base>,
) -> Result<(f64, &'static str), crate::QualifyError> {
    let bad = |why: String| crate::QualifyError::Figure {
        name: name.to_string(),
        why,
    };
    if let Some(b) = base(name) {
        return Ok((b.value, b.kind.unit()));
    }
    let Some(s) = SUFFIXES.iter().find(|s| name.ends_with(s.suffix)) else {
        return Err(bad("no such figure".into()));
    };
    let stem = &name[..name.len() - s.suffix.len()];
    let b = base(stem).ok_or_else(|| bad(format!("no such figure ({stem} is none either)")))?;
    let canonical = match (b.kind, s.kind, b.bytes_per_op) {
        (k, want, _) if k == want => b.value,
        (Kind::Rate, Kind::Bandwidth, Some(bytes)) => b.value * bytes / GIB,
        (Kind::Bandwidth, Kind::Rate, Some(bytes)) => b.value * GIB / bytes,
        (k, _, _) => {
            return Err(bad(format!(
                "{stem} is a {} ({}) and has no fixed size per operation to convert it by; write {stem} or a {} unit",
                match k { Kind::Bandwidth => "bandwidth", Kind::Rate => "rate" },
                k.unit(),
                match k { Kind::Bandwidth => "bandwidth (_gib_s, _mib_s, _gb_s, _mb_s)", Kind::Rate => "rate (_ops_s, _kops_s, _rpc_s, _iops)" },
            )))
        }
    };
    Ok((canonical * s.per_canonical, s.unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(n: &str) -> Option<Base> {
        match n {
            "network.brw_write_4k" => Some(Base {
                value: 1000.0,
                kind: Kind::Rate,
                bytes_per_op: Some(4096.0),
            }),
            "network.brw_write" => Some(Base {
                value: 2.0,
                kind: Kind::Bandwidth,
                bytes_per_op: Some(GIB),
            }),
            "network.ping" => Some(Base {
                value: 5000.0,
                kind: Kind::Rate,
                bytes_per_op: None,
            }),
            _ => None,
        }
    }

    #[test]
    fn suffixes_convert_from_the_canonical_unit() {
        assert_eq!(resolve("network.brw_write", &base).unwrap(), (2.0, "GiB/s"));
        assert_eq!(
            resolve("network.brw_write_gib_s", &base).unwrap(),
            (2.0, "GiB/s")
        );
        assert_eq!(
            resolve("network.brw_write_mib_s", &base).unwrap(),
            (2048.0, "MiB/s")
        );
        let (gb, _) = resolve("network.brw_write_gb_s", &base).unwrap();
        assert!((gb - 2.147483648).abs() < 1e-9);
        assert_eq!(
            resolve("network.ping_kops_s", &base).unwrap(),
            (5.0, "kops/s")
        );
    }

    #[test]
    fn fixed_sizes_turn_rates_into_bandwidths_and_back() {
        let (mib, _) = resolve("network.brw_write_4k_mib_s", &base).unwrap();
        assert!((mib - 1000.0 * 4096.0 / 1048576.0).abs() < 1e-9);
        assert_eq!(
            resolve("network.brw_write_rpc_s", &base).unwrap(),
            (2.0, "RPC/s")
        );
        let e = resolve("network.ping_mib_s", &base)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no fixed size"), "{e}");
        assert!(resolve("network.pong", &base)
            .unwrap_err()
            .to_string()
            .contains("no such figure"));
    }
}
