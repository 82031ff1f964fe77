//! The one place a run's results envelope is made: every tool's JSON,
//! the store's record and (for tools that rewrite their outputs as they
//! go) each partial document come from [`make`], with the host read
//! here, so no tool and no formatter builds one. Readers that take a
//! stored or written document back (`iolab_results::stream`, the
//! store's queries) reassemble what was made here.

use iolab_core::env::FsInfo;
use iolab_core::Outcome;
use iolab_results::{Envelope, Environment};

/// A run's identity as its document states it.
#[derive(Debug, Clone)]
pub struct Head {
    /// How the tool's messages start (`iolab survey disk`, `mdtest`).
    pub prog: String,
    /// The document's tool (`survey disk`, `xdd`).
    pub tool: String,
    /// The payload's schema (`iolab.xdd/2`).
    pub schema: &'static str,
    /// The tool whose semantics and output it follows.
    pub compatible_with: Option<&'static str>,
    /// The command line as typed.
    pub command_line: String,
}

/// The document of a run: `head`'s identity, `config` as validated,
/// this host and the file systems the run touched, how it ended and
/// the tool's payload; started at `started_unix_ns` and not yet
/// finished (0, as the envelope defines).
pub fn make<C, P>(
    head: &Head,
    config: C,
    filesystems: Vec<FsInfo>,
    outcome: Outcome,
    payload: P,
    started_unix_ns: u64,
) -> Envelope<C, P>
where
    C: serde::Serialize,
    P: serde::Serialize,
{
    let environment = Environment {
        host: iolab_core::env::host_info(),
        filesystems,
    };
    let mut doc = Envelope::new(
        head.schema,
        &head.tool,
        &head.command_line,
        config,
        environment,
        outcome,
        payload,
    );
    doc.tool.compatible_with = head.compatible_with.map(str::to_string);
    doc.started_unix_ns = started_unix_ns;
    doc
}
