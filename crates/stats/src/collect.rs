//! The sampling loop: every statistic at start, each again when its
//! interval comes round, all once more at stop. Files are read directly;
//! nothing is started per sample.

use crate::config::{Spec, Stat};
use crate::linux;
use crate::lustre::{self, Sources};
use crate::sample::{NodeSamples, Row, Sample, Series};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often the loop looks at its stop request while it waits: the
/// bound on how late a stop sample can be.
const POLL: Duration = Duration::from_millis(100);

/// Where samples go: files for a detached collector, memory for a
/// [`crate::Session`].
pub trait Sink {
    /// A statistic that does not exist on this node, once, at start.
    fn absent(&mut self, stat: Stat, why: &str) -> std::io::Result<()>;
    /// One sample of `stat`.
    fn sample(&mut self, stat: Stat, sample: &Sample) -> std::io::Result<()>;
    /// Something the record's reader should know (a sample that failed).
    fn note(&mut self, text: &str) -> std::io::Result<()>;
}

/// Takes one sample into `sink`. A statistic that cannot be read this
/// time (a file gone for a moment) costs that sample and a note, not the
/// collection; only a sink that cannot record ends the loop.
fn take(reader: &Reader, sink: &mut dyn Sink, stat: Stat) -> std::io::Result<()> {
    match reader.sample(stat) {
        Ok(s) => sink.sample(stat, &s),
        Err(e) => sink.note(&format!(
            "{}: a sample at {} ns could not be read: {e}",
            stat.name(),
            iolab_core::clock::wall_ns()
        )),
    }
}

/// Reads one statistic now. None when it does not exist here.
pub struct Reader {
    spec: Spec,
    sources: Sources,
    hz: u64,
}

impl Reader {
    /// A reader for `spec` on this node's usual files.
    pub fn new(spec: Spec) -> Reader {
        Reader::with_sources(spec, Sources::default())
    }

    /// A reader whose Lustre files are looked for in `sources`.
    pub fn with_sources(spec: Spec, sources: Sources) -> Reader {
        Reader {
            spec,
            sources,
            hz: linux::clock_ticks_per_s(),
        }
    }

    /// Why `stat` cannot be recorded here, if it cannot.
    pub fn absent(&self, stat: Stat) -> Option<String> {
        match stat {
            Stat::Statfs if self.spec.statfs_paths.is_empty() => {
                Some("no STATFS_PATHS configured".into())
            }
            Stat::Statfs => {
                let bad = self.unaskable();
                let named: Vec<String> = bad.iter().map(|(p, e)| format!("{p} ({e})")).collect();
                (bad.len() == self.spec.statfs_paths.len()).then(|| {
                    format!(
                        "no STATFS_PATHS path can be asked on this node: {}",
                        named.join(", ")
                    )
                })
            }
            s if Stat::LINUX.contains(&s) => None,
            s if self.sources.files(s).is_empty() => Some(format!(
                "no {} statistics on this node (looked in {})",
                s.name(),
                self.sources.places(s)
            )),
            _ => None,
        }
    }

    /// What the record's reader must know about `stat` before its first
    /// sample: a `STATFS_PATHS` path this node cannot ask (a typo, a file
    /// system not mounted here) is named, not left out unsaid. Nodes
    /// share one config, so such a path is a note of that node, not an
    /// error of the config.
    pub fn start_notes(&self, stat: Stat) -> Vec<String> {
        match stat {
            Stat::Statfs => self
                .unaskable()
                .into_iter()
                .map(|(p, e)| {
                    format!("statfs: {p} cannot be asked on this node ({e}); not recorded")
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Each `STATFS_PATHS` path whose statfs fails now, with why.
    fn unaskable(&self) -> Vec<(String, std::io::Error)> {
        self.spec
            .statfs_paths
            .iter()
            .filter_map(|p| linux::statfs(p).err().map(|e| (p.display().to_string(), e)))
            .collect()
    }

    /// The rows of `stat` now, stamped.
    pub fn sample(&self, stat: Stat) -> std::io::Result<Sample> {
        let unix_ns = iolab_core::clock::wall_ns();
        let mono_ns = iolab_core::clock::mono_ns();
        let rows = self.rows(stat)?;
        Ok(Sample {
            unix_ns,
            mono_ns,
            rows,
        })
    }

    fn rows(&self, stat: Stat) -> std::io::Result<Vec<Row>> {
        let proc = |f: &str| std::fs::read_to_string(format!("/proc/{f}"));
        Ok(match stat {
            Stat::Vmstat => vec![linux::parse_vmstat(
                &proc("stat")?,
                &proc("vmstat")?,
                &proc("meminfo")?,
                self.hz,
            )],
            Stat::Cpu => linux::parse_cpu(&proc("stat")?, self.hz),
            Stat::Disk => linux::parse_diskstats(&proc("diskstats")?),
            Stat::Meminfo => vec![linux::parse_meminfo(&proc("meminfo")?)],
            Stat::Net => linux::parse_netdev(&proc("net/dev")?),
            Stat::Statfs => self.statfs_rows(),
            lustre_stat => lustre::read(lustre_stat, &self.sources).unwrap_or_default(),
        })
    }

    /// A path that cannot be asked (unmounted meanwhile) is left out of
    /// that sample rather than ending the collection.
    fn statfs_rows(&self) -> Vec<Row> {
        self.spec
            .statfs_paths
            .iter()
            .filter_map(|p| linux::statfs(p).ok())
            .collect()
    }
}

/// Runs the loop until `stop()` says so: start samples, interval
/// samples, stop samples. `started` is called once the start samples are
/// recorded (a detached collector then tells its parent it is running).
pub fn run(
    reader: &Reader,
    sink: &mut dyn Sink,
    stop: &dyn Fn() -> bool,
    started: &mut dyn FnMut(),
) -> std::io::Result<()> {
    let mut due: BTreeMap<Stat, Option<Instant>> = BTreeMap::new();
    let begin = Instant::now();
    for (&stat, &secs) in &reader.spec.intervals {
        if let Some(why) = reader.absent(stat) {
            sink.absent(stat, &why)?;
            continue;
        }
        for note in reader.start_notes(stat) {
            sink.note(&note)?;
        }
        take(reader, sink, stat)?;
        // An interval beyond the clock's range (only a spec that skipped
        // its checks has one) means no sample until stop.
        let every = (secs > 0)
            .then(|| begin.checked_add(Duration::from_secs(secs)))
            .flatten();
        due.insert(stat, every);
    }
    started();
    while !stop() {
        let now = Instant::now();
        let mut next = now + POLL;
        for (&stat, when) in due.iter_mut() {
            let Some(at) = *when else { continue };
            if at <= now {
                take(reader, sink, stat)?;
                let step = Duration::from_secs(reader.spec.intervals[&stat]);
                // A late sample does not make the next ones crowd in.
                let mut n = at.checked_add(step);
                while let Some(t) = n.filter(|t| *t <= now) {
                    n = t.checked_add(step);
                }
                *when = n;
            }
            next = next.min(when.unwrap_or(next));
        }
        std::thread::sleep(next.saturating_duration_since(Instant::now()).min(POLL));
    }
    for &stat in due.keys() {
        take(reader, sink, stat)?;
    }
    Ok(())
}

/// A [`Sink`] that keeps everything in memory.
#[derive(Debug)]
pub struct Memory {
    /// What was recorded so far.
    pub samples: NodeSamples,
}

impl Memory {
    /// An empty record for `node`.
    pub fn new(node: &str) -> Memory {
        Memory {
            samples: NodeSamples {
                node: node.to_string(),
                stats: BTreeMap::new(),
                notes: Vec::new(),
            },
        }
    }
}

impl Sink for Memory {
    fn absent(&mut self, stat: Stat, why: &str) -> std::io::Result<()> {
        self.samples.stats.insert(stat, Series::Absent(why.into()));
        Ok(())
    }

    fn sample(&mut self, stat: Stat, sample: &Sample) -> std::io::Result<()> {
        match self
            .samples
            .stats
            .entry(stat)
            .or_insert_with(|| Series::Samples(Vec::new()))
        {
            Series::Samples(v) => v.push(sample.clone()),
            Series::Absent(_) => {}
        }
        Ok(())
    }

    fn note(&mut self, text: &str) -> std::io::Result<()> {
        self.samples.notes.push(text.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn zero_interval_means_start_and_stop_only() {
        let spec = Spec::local(0, vec!["/".into()]);
        let reader = Reader::new(spec);
        let mut mem = Memory::new("n");
        let polls = AtomicUsize::new(0);
        let stop = || polls.fetch_add(1, Ordering::Relaxed) >= 3;
        run(&reader, &mut mem, &stop, &mut || {}).unwrap();
        for stat in Stat::LINUX {
            match &mem.samples.stats[&stat] {
                Series::Samples(v) => assert_eq!(v.len(), 2, "{stat:?}"),
                Series::Absent(w) => panic!("{stat:?} absent: {w}"),
            }
        }
    }

    #[test]
    fn lustre_and_statfs_without_paths_are_absent_not_errors() {
        let mut spec = Spec::local(0, Vec::new());
        spec.intervals.insert(Stat::Brw, 1);
        spec.intervals.insert(Stat::Statfs, 0);
        let dir = std::env::temp_dir().join(format!("iolab-nolustre-{}", std::process::id()));
        let reader = Reader::with_sources(spec, Sources::under(&dir));
        let mut mem = Memory::new("n");
        run(&reader, &mut mem, &|| true, &mut || {}).unwrap();
        assert!(
            matches!(&mem.samples.stats[&Stat::Brw], Series::Absent(w) if w.contains("no brw"))
        );
        assert!(matches!(
            &mem.samples.stats[&Stat::Statfs],
            Series::Absent(_)
        ));
        assert!(matches!(&mem.samples.stats[&Stat::Disk], Series::Samples(v) if v.len() == 2));
    }

    /// A STATFS_PATHS path this node cannot ask is named in a note and
    /// the others are recorded; when none can be asked, statfs is absent
    /// with the paths and why.
    #[test]
    fn a_statfs_path_that_cannot_be_asked_is_named() {
        let spec = Spec {
            intervals: [(Stat::Statfs, 0)].into_iter().collect(),
            statfs_paths: vec!["/".into(), "/no/such/iolab-path".into()],
        };
        let mut mem = Memory::new("n");
        run(&Reader::new(spec), &mut mem, &|| true, &mut || {}).unwrap();
        assert_eq!(
            mem.samples.notes,
            ["statfs: /no/such/iolab-path cannot be asked on this node (No such file or directory (os error 2)); not recorded"]
        );
        let Series::Samples(v) = &mem.samples.stats[&Stat::Statfs] else {
            panic!("statfs absent")
        };
        assert!(v
            .iter()
            .all(|s| s.rows.len() == 1 && s.rows[0].series == "/"));
        let spec = Spec {
            intervals: [(Stat::Statfs, 0)].into_iter().collect(),
            statfs_paths: vec!["/no/such/iolab-path".into()],
        };
        let mut mem = Memory::new("n");
        run(&Reader::new(spec), &mut mem, &|| true, &mut || {}).unwrap();
        assert!(
            matches!(&mem.samples.stats[&Stat::Statfs], Series::Absent(w) if w.contains("/no/such/iolab-path (No such file")),
            "{:?}",
            mem.samples.stats
        );
    }

    /// The whole path for a Lustre statistic: files found under a tree,
    /// sampled at start, changed by "the workload", sampled at stop, and
    /// turned into a rate by the analysis.
    #[test]
    fn lustre_service_counters_become_rates() {
        let dir = std::env::temp_dir().join(format!("iolab-lustre-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let svc = dir.join("proc/fs/lustre/ost/OSS/ost_io");
        std::fs::create_dir_all(&svc).unwrap();
        let text = |n: u64, sum: u64| {
            format!(
                "snapshot_time 1700000000.000001 secs.usecs\nost_write {n} samples [bytes] 4096 1048576 {sum} 1\n"
            )
        };
        std::fs::write(svc.join("stats"), text(10, 10 << 20)).unwrap();
        let spec = Spec {
            intervals: [(Stat::Service, 0)].into_iter().collect(),
            statfs_paths: Vec::new(),
        };
        let reader = Reader::with_sources(spec, Sources::under(&dir));
        let mut mem = Memory::new("oss1");
        let stop = || {
            std::fs::write(svc.join("stats"), text(30, 30 << 20)).unwrap();
            true
        };
        run(&reader, &mut mem, &stop, &mut || {}).unwrap();
        let tables = crate::analyse::tables(&mem.samples);
        let t = &tables[0];
        assert_eq!(t.stat, Stat::Service);
        assert_eq!(t.column("series").unwrap(), ["ost/ost_io/ost_write[bytes]"]);
        assert_eq!(t.column("samples_delta").unwrap(), ["20"]);
        assert_eq!(t.column("sum_delta").unwrap(), [(20u64 << 20).to_string()]);
        let rate: f64 = t.column("sum_per_s").unwrap()[0].parse().unwrap();
        assert!(rate > 0.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
