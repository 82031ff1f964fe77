//! Live figures (`--live`): a sampler thread that reads the counters the
//! engines bump ([`iolab_core::live`]) every interval and writes one row
//! per interval and phase (per rank or host too, across processes),
//! as JSON Lines, CSV or an OpenMetrics textfile; it watches for steady
//! state (`--steady`) and feeds the terminal views. See docs/live.md.
//!
//! ```
//! use iolab_core::live::Board;
//! use iolab_live::{format::Format, Context, Live, Options, Output};
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//!
//! let board = Arc::new(Board::new());
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let keep = seen.clone();
//! let opts = Options {
//!     output: Output::None,
//!     format: Format::Jsonl,
//!     interval: Duration::from_millis(100),
//!     steady: None,
//! };
//! let ctx = Context { tool: "demo".into(), run_id: "r1".into(), envelope: 1, host: "h".into() };
//! let view: iolab_live::Observer = Box::new(move |f| keep.lock().unwrap().extend(f.rows.to_vec()));
//! let live = Live::start(opts, ctx, board.clone(), None, vec![view]).unwrap();
//! let rec = board.recorder("write", 0);
//! for _ in 0..1000 {
//!     rec.op(4096, 2_000);
//! }
//! drop(rec);
//! live.finish();
//! let rows = seen.lock().unwrap();
//! assert_eq!(rows.iter().map(|r| r.ops).sum::<u64>(), 1000);
//! assert!(rows.last().unwrap().last);
//! ```

pub mod align;
pub mod format;
pub mod peers;
pub mod row;
pub mod rows;
pub mod sample;
pub mod session;
pub mod status;
pub mod steady;
pub mod view;

pub use row::{Header, Latency, Record, Row};
pub use session::{new_run_id, Context, Frame, Live, Observer, Options, Output, Summary};
pub use steady::Steady;
