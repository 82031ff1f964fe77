//! A side channel between the processes of a run, for a thread other than
//! the tasks (the live-figures sampler): small messages sent and received
//! without blocking, apart from the collectives, so they never match the
//! tasks' traffic and never wait for a task.

/// Point-to-point messages between processes, each call returning at
/// once. Under MPI it is a communicator of its own (duplicated from the
/// world when MPI started), used under the process-wide MPI lock.
pub trait SideChannel: Send {
    /// This process's rank.
    fn rank(&self) -> usize;
    /// How many processes there are.
    fn size(&self) -> usize;
    /// Sends `bytes` to process `to` under `tag` (0..=15), without
    /// waiting for it to arrive.
    fn send(&mut self, to: usize, tag: u8, bytes: Vec<u8>);
    /// Every message under `tag` that has arrived, with its sender.
    fn receive(&mut self, tag: u8) -> Vec<(usize, Vec<u8>)>;
}
