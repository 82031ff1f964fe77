//! `iolab qualify`: a storage system qualified layer by layer, bottom-up
//! as the Lustre I/O kit advises and seed 003 (the OpenSFS SMP-affinity
//! demonstration) does by hand: the network (lst), the devices or
//! objects (a survey), data (xdd) and metadata (mdtest). Each layer is
//! curves of a real tool run through `iolab sweep`'s engine, each curve
//! grown point by point (x doubling) until it stops growing ([`knee`]);
//! each figure's limit is its best point, judged against the layer
//! below ([`verdict`]), the plan's expectations ([`expr`]) and a
//! baseline qualification.
//!
//! The modules other than [`run`], [`machine`] and [`caveat`] (which
//! look this machine up) are pure: plan in, curves, verdicts and tables
//! out.
//!
//! ```
//! use iolab_qualify::{curves, machine::Machine, plan};
//! let m = Machine { cores: 2, tmp: "/tmp".into(), ports: (20001, 20002), token: "t".into(), rsh: "ssh".into() };
//! let p = plan::fill(plan::Plan::read("[data]\nexpect = [\"data.write >= 0.5 * network.brw_write\"]").unwrap(), &m, None).unwrap();
//! let c = curves::curves(&p);
//! assert_eq!(c.curves[0].label, "network ping");
//! iolab_qualify::verdict::check_expectations(&p, &c).unwrap();
//! ```

pub mod caveat;
pub mod curves;
mod error;
pub mod expr;
pub mod hosts;
pub mod knee;
pub mod layer;
pub mod machine;
pub mod nettest;
pub mod plan;
pub mod run;
pub mod units;
pub mod verdict;

pub use error::QualifyError;
