//! `iolab xddcp`: XDD's network file copy (guide section 6) on iolab
//! xdd's end-to-end copies. For each file it starts the destination side
//! (`iolab xdd -e2e isdestination ...`) on the destination host through
//! the remote shell, waits until it listens, runs the source side here,
//! and reports bytes, seconds and MB/s. `-a` keeps a restart file on the
//! destination, so running the same command again resumes; a file that
//! exists on the destination is never overwritten otherwise
//! (`-e2e noclobber`). XDD's `-f` killed every xdd on the destination
//! when the ports were taken; here it moves to the next free port range.
//!
//! ```
//! use iolab_xddcp::plan::split_destination;
//! let (shell, addr, path) = split_destination("ns1@10.0.0.2:/data/copy").unwrap();
//! assert_eq!((shell.as_str(), addr.as_str(), path.as_str()), ("ns1", "10.0.0.2", "/data/copy"));
//! ```

pub mod args;
pub mod leftover;
pub mod plan;
pub mod run;
