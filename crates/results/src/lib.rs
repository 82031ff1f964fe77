//! The results envelope: one outer shape for every iolab result document
//! (mdtest, xdd, and the tools to come), so that a store, a comparison or
//! a report can read any of them without knowing the tool. The tool's own
//! data sits in `payload`; everything a reader needs to trust and
//! reproduce the numbers (command line, validated configuration, host and
//! file systems, how the run ended) sits around it, in the same place for
//! every tool.
//!
//! ```
//! use iolab_results::{Envelope, Environment};
//! use iolab_core::Outcome;
//! let env = Environment { host: Default::default(), filesystems: vec![] };
//! let doc = Envelope::new("iolab.example/1", "example", "iolab example -n 1",
//!     serde_json::json!({"n": 1}), env, Outcome::Completed, serde_json::json!({"ops": 1}));
//! let text = doc.to_json();
//! let back = iolab_results::parse_any(&text).unwrap();
//! assert_eq!(back.tool.name, "example");
//! assert_eq!(back.payload["ops"], 1);
//! ```

pub mod figures;
pub mod stream;
pub use figures::{Figure, Spread};

use iolab_core::env::{FsInfo, HostInfo};
use iolab_core::Outcome;
use serde::{Deserialize, Serialize};

/// Version of the envelope's own fields (not of any payload). Readers
/// refuse a document whose envelope version they do not know.
pub const ENVELOPE_VERSION: u32 = 1;

/// Which program wrote the document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The subcommand (`mdtest`, `xdd`).
    pub name: String,
    /// iolab's version.
    pub version: String,
    /// The tool whose semantics and output it follows (`mdtest 1.9.3`).
    pub compatible_with: Option<String>,
}

/// Where the run happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// The host that wrote the document (rank 0 under MPI).
    pub host: HostInfo,
    /// File systems the run touched, one per path.
    pub filesystems: Vec<FsInfo>,
}

/// One result document: the envelope fields, then the tool's payload.
/// `C` is the validated configuration and `P` the tool's results; a
/// reader that does not know the tool uses `serde_json::Value` for both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope<C, P> {
    /// The payload's schema, `iolab.<tool>/<n>`.
    pub schema: String,
    /// [`ENVELOPE_VERSION`] of the writer.
    pub envelope: u32,
    /// Which program wrote it.
    pub tool: Tool,
    /// The command line as the user typed it.
    pub command_line: String,
    /// The run's id, which its live stream (`--live`) carries too, so
    /// the stream and the results are known to belong together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Wall-clock start, Unix nanoseconds.
    pub started_unix_ns: u64,
    /// Wall-clock end, Unix nanoseconds (0 while the run goes on).
    pub finished_unix_ns: u64,
    /// Every validated option.
    pub config: C,
    /// Host and file systems.
    pub environment: Environment,
    /// How the run ended.
    pub outcome: Outcome,
    /// Notes and warnings the run produced (data, not prints).
    pub notes: Vec<String>,
    /// System statistics collected during the run (`--stats`), when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<serde_json::Value>,
    /// The run's headline figures, stated by the engine that measured
    /// them; the store indexes these (and reads a payload only for a
    /// document without them, from a tool or version that predates them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<Figure>,
    /// The tool's own results.
    pub payload: P,
}

impl<C: Serialize, P: Serialize> Envelope<C, P> {
    /// A document for `tool` with the current version and start time now.
    pub fn new(
        schema: &str,
        tool: &str,
        command_line: &str,
        config: C,
        environment: Environment,
        outcome: Outcome,
        payload: P,
    ) -> Self {
        Self {
            schema: schema.to_string(),
            envelope: ENVELOPE_VERSION,
            tool: Tool {
                name: tool.to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                compatible_with: None,
            },
            command_line: command_line.to_string(),
            run_id: None,
            started_unix_ns: iolab_core::clock::wall_ns(),
            finished_unix_ns: 0,
            config,
            environment,
            outcome,
            notes: Vec::new(),
            stats: None,
            figures: Vec::new(),
            payload,
        }
    }

    /// The envelope's fields as JSON values, the payload left out (null):
    /// what a store records beside a payload it takes in parts.
    pub fn head(&self) -> serde_json::Result<Envelope<serde_json::Value, serde_json::Value>> {
        Ok(Envelope {
            schema: self.schema.clone(),
            envelope: self.envelope,
            tool: self.tool.clone(),
            command_line: self.command_line.clone(),
            run_id: self.run_id.clone(),
            started_unix_ns: self.started_unix_ns,
            finished_unix_ns: self.finished_unix_ns,
            config: serde_json::to_value(&self.config)?,
            environment: self.environment.clone(),
            outcome: self.outcome.clone(),
            notes: self.notes.clone(),
            stats: self.stats.clone(),
            figures: self.figures.clone(),
            payload: serde_json::Value::Null,
        })
    }

    /// Pretty-printed JSON with a final newline. Serialising plain data
    /// cannot fail; should a payload's `Serialize` fail, the text says so
    /// instead of panicking.
    pub fn to_json(&self) -> String {
        match serde_json::to_string_pretty(self) {
            Ok(s) => s + "\n",
            Err(e) => format!("{{\"error\": \"cannot serialise results: {e}\"}}\n"),
        }
    }
}

impl<C, P> Envelope<C, P> {
    /// The same document around another payload (a reader that keeps
    /// the envelope's fields and reads the payload apart, or none).
    pub fn with_payload<Q>(self, payload: Q) -> Envelope<C, Q> {
        Envelope {
            schema: self.schema,
            envelope: self.envelope,
            tool: self.tool,
            command_line: self.command_line,
            run_id: self.run_id,
            started_unix_ns: self.started_unix_ns,
            finished_unix_ns: self.finished_unix_ns,
            config: self.config,
            environment: self.environment,
            outcome: self.outcome,
            notes: self.notes,
            stats: self.stats,
            figures: self.figures,
            payload,
        }
    }
}

/// Why a document could not be read as an envelope.
#[derive(Debug)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// Reads any tool's document, payload untyped; refuses an envelope
/// version this build does not know.
pub fn parse_any(text: &str) -> Result<Envelope<serde_json::Value, serde_json::Value>, ParseError> {
    let doc: Envelope<serde_json::Value, serde_json::Value> =
        serde_json::from_str(text).map_err(|e| ParseError(format!("not an iolab result: {e}")))?;
    if doc.envelope > ENVELOPE_VERSION {
        return Err(ParseError(format!(
            "envelope version {} is newer than this iolab ({ENVELOPE_VERSION})",
            doc.envelope
        )));
    }
    Ok(doc)
}
