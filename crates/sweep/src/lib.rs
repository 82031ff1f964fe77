//! Scaling sweeps: a TOML plan names a tool, its fixed options and the
//! axes to iterate; every point is run `repeats` times, each repeat a
//! child `iolab` process (or a launcher such as mpirun) whose JSON is
//! recorded in the results store as a run of the plan's series. The
//! engine prints nothing: it reports [`run::Event`]s to its caller.
//!
//! ```
//! use iolab_sweep::plan::Plan;
//! let plan = Plan::parse(r#"
//!     label = "tmpfs"
//!     tool = "mdtest"
//!     args = "-F -n 100 -d /tmp/sweep"
//!     [[axes]]
//!     name = "tasks"
//!     option = "--tasks"
//!     values = [1, 2, 4]
//! "#).unwrap();
//! let points = plan.points();
//! assert_eq!(points.len(), 3);
//! assert_eq!(points[2].key, "tasks=4");
//! let argv = plan.command("iolab", &points[2], 1, "r.json").unwrap();
//! assert_eq!(argv.join(" "), "iolab mdtest -F -n 100 -d /tmp/sweep --tasks 4 --json r.json");
//! ```

pub mod plan;
pub mod run;
pub mod slurm;
