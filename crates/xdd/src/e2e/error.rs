//! Why an end-to-end destination or port layout cannot be used.

/// An end-to-end destination or port layout that cannot be used (bad
/// usage: the caller names the option).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum E2eError {
    /// `-e2e destination` that does not read as HOST[:PORT[,N]].
    #[error("destination '{given}': {why} (HOST[:PORT[,N]])")]
    Destination {
        /// As given.
        given: String,
        /// What is wrong.
        why: String,
    },
    /// A destination's ports pass 65535.
    #[error(
        "{destination}: {ports} ports from {base} go past port 65535; choose a lower base port"
    )]
    PastMax {
        /// The destination, as the messages describe it.
        destination: String,
        /// Its ports.
        ports: u64,
        /// Its base port.
        base: u16,
    },
    /// Two QThreads on one port.
    #[error(
        "port {port} of {host} is used by two QThreads; give the destinations separate port ranges"
    )]
    PortTwice {
        /// The port.
        port: u16,
        /// The host.
        host: String,
    },
    /// No destination given.
    #[error("no destination: give -e2e destination HOST[:PORT[,N]] on both sides")]
    NoDestination,
    /// Several destinations, not each with its ports.
    #[error("with several destinations, give each its ports (HOST:PORT,N) or -e2e portcount N")]
    PortsOfEach,
}
