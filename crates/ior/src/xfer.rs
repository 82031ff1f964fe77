//! One task's transfers in one access, as IOR's WriteOrRead makes them:
//! segment by segment, block transfer by block transfer, until the last
//! segment, the deadline (`-D`), or a transfer count (a wear-out's
//! target, `stoneWallingWearOutIterations`); then again from the first
//! segment while `minTimeDuration` has not passed. Transfers are numbered
//! along that order (transfer k is transfer k mod n of segment
//! (k / n) mod s), so a wear-out continues where the wall stopped a task.

use crate::data::Generator;
use crate::file::{Failed, Files, Open};
use crate::plan::Offsets;
use iolab_core::clock::{mono_ns, wall_ns};
use iolab_core::live::Recorder;

/// What one task's transfers did.
#[derive(Debug, Default)]
pub struct Tally {
    /// Transfers made.
    pub transfers: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Transfers whose check found a difference.
    pub errors: u64,
    /// File offset of the first byte found wrong.
    pub first_error: Option<u64>,
    /// The deadline or the transfer count stopped it.
    pub hit: bool,
    /// A stop was requested (Ctrl-C).
    pub interrupted: bool,
    /// The first failed call, with the offset of its transfer.
    pub failure: Option<(u64, std::io::Error)>,
}

/// Where and how long to go.
pub struct Pass<'a> {
    /// The files.
    pub files: &'a Files<'a>,
    /// Where transfers go.
    pub offsets: &'a Offsets,
    /// Segments of a pass over the file.
    pub segments: u64,
    /// Bytes per transfer.
    pub transfer: usize,
    /// Wall time after which a transfer stops the loop (`-D`); u64::MAX: none.
    pub deadline_ns: u64,
    /// Stop once this many transfers are made (0: no such limit).
    pub stop_after: u64,
    /// Keep going over the file until this wall time (`minTimeDuration`).
    pub min_until_ns: u64,
    /// fsync after every write (`-Y`).
    pub fsync_per_write: bool,
    /// A short transfer is an error (`-x`).
    pub once: bool,
    /// Sleep after each transfer (`interIODelay`), microseconds.
    pub delay_us: u64,
    /// The run's token, looked at before each transfer.
    pub cancel: &'a iolab_core::CancelToken,
    /// Where each transfer is counted and timed for live figures (off:
    /// no clock is read for it).
    pub live: &'a Recorder,
}

/// What the transfers do with their bytes.
pub enum Mode<'b> {
    /// Write what the generator makes for each offset.
    Write(&'b mut Generator),
    /// Read into `buf`; with a generator, check every transfer.
    Read(&'b mut [u8], Option<&'b mut Generator>),
}

impl Pass<'_> {
    /// Transfers per pass over the file.
    pub fn total(&self) -> u64 {
        self.segments.saturating_mul(self.offsets.per_segment())
    }

    /// Makes transfers from number `from` on: until the end of a pass
    /// (and `minTimeDuration`), the deadline or `stop_after` when `to`
    /// is None; else up to number `to` whatever the clock. Returns the
    /// number of the next transfer.
    pub fn run(
        &self,
        f: &mut Open,
        mode: &mut Mode,
        tally: &mut Tally,
        from: u64,
        to: Option<u64>,
    ) -> u64 {
        let (total, per) = (self.total(), self.offsets.per_segment());
        if total == 0 {
            return from;
        }
        let mut k = from;
        loop {
            match to {
                Some(end) if k >= end => break,
                None if k > 0 && k.is_multiple_of(total) && wall_ns() >= self.min_until_ns => break,
                _ => {}
            }
            if self.cancel.is_cancelled() {
                tally.interrupted = true;
                break;
            }
            let offset = self.offsets.at((k / per) % self.segments, k % per);
            let t0 = if self.live.is_on() { mono_ns() } else { 0 };
            if let Err(e) = self.one(f, mode, offset, tally) {
                self.live.error();
                // What the failed transfer moved before its error was
                // moved: counted in the results and the live stream alike.
                tally.bytes += e.moved as u64;
                self.live.ops(0, e.moved as u64);
                tally.failure = Some((offset, e.error));
                break;
            }
            tally.transfers += 1;
            tally.bytes += self.transfer as u64;
            if self.live.is_on() {
                self.live.op(self.transfer as u64, mono_ns() - t0);
            }
            // After the transfer's time is taken: the delay is no latency.
            if self.delay_us > 0 {
                std::thread::sleep(std::time::Duration::from_micros(self.delay_us));
            }
            k += 1;
            if to.is_none() && self.hit(tally) {
                tally.hit = true;
                break;
            }
        }
        k
    }

    /// The deadline or the transfer count is reached.
    #[inline]
    fn hit(&self, tally: &Tally) -> bool {
        (self.deadline_ns != u64::MAX && wall_ns() > self.deadline_ns)
            || (self.stop_after != 0 && tally.transfers == self.stop_after)
    }

    /// One transfer at `offset`.
    #[inline]
    fn one(
        &self,
        f: &mut Open,
        mode: &mut Mode,
        offset: u64,
        tally: &mut Tally,
    ) -> Result<(), Failed> {
        match mode {
            Mode::Write(gen) => {
                let data = gen.prepare(offset);
                self.files.write_at(f, data, offset, self.once)?;
                if self.fsync_per_write {
                    self.files.fsync(f).map_err(|error| Failed {
                        moved: data.len(),
                        error,
                    })?;
                }
            }
            Mode::Read(buf, check) => {
                self.files.read_at(f, buf, offset, self.once)?;
                if let Some(gen) = check {
                    if let Some(at) = gen.first_difference(buf, offset) {
                        self.live.error();
                        tally.errors += 1;
                        tally.first_error.get_or_insert(offset + at as u64);
                    }
                }
            }
        }
        Ok(())
    }
}
