//! The seam between the group engine and a consumer group (Kafka's): the
//! group decides which partitions this process holds, and one transaction
//! commits a batch's output together with its input positions, so a member
//! that lost its partitions cannot commit for them (it is fenced).

use std::time::Duration;

use crate::batch::RecordBatch;
use crate::connector::ConnectorError;
use crate::output::TransformOutput;

/// A partition given to this member, where its last owner left it.
#[derive(Debug, Clone, PartialEq)]
pub struct Assigned {
    pub partition: u32,
    /// The next offset to process: the group's committed offset (`None`
    /// when nothing was committed yet; reading starts where the source's
    /// `starting-offsets` says).
    pub position: Option<i64>,
    /// What was committed with that offset (the state pointer); empty if
    /// nothing.
    pub metadata: String,
}

/// What one poll brought: rebalances first (in the order they happened),
/// then records of partitions held after them.
#[derive(Debug, Default)]
pub struct Polled {
    pub revoked: Vec<u32>,
    pub assigned: Vec<Assigned>,
    pub batches: Vec<RecordBatch>,
}

/// One partition's entry in a commit: the next offset to process and the
/// state pointer that goes with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    pub partition: u32,
    pub next: i64,
    pub metadata: String,
}

/// Why a commit did not happen.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The group moved on (a rebalance this member missed, or another
    /// process took over its transactional id): nothing of the batch is
    /// visible, and the member's uncommitted work must be dropped.
    #[error("fenced: {0}")]
    Fenced(String),
    #[error(transparent)]
    Failed(#[from] ConnectorError),
}

pub trait GroupMember: Send {
    fn description(&self) -> String;

    /// This member's id within the group (for progress and logs).
    fn member_id(&self) -> String;

    /// Partitions of the input (a stateful query's state partitions are
    /// the input's, so keys must be partitioned as the state key says).
    fn partition_count(&self) -> u32;

    /// Records of the held partitions (at most about `max`), waiting up to
    /// `timeout` for the first. Rebalances happen inside a poll.
    fn poll(&mut self, max: usize, timeout: Duration) -> Result<Polled, ConnectorError>;

    /// Write `parts`' output (each record to its route's destination) and
    /// commit `positions`, all in one transaction. Returns the records
    /// written.
    fn commit(
        &mut self,
        parts: &[(RecordBatch, TransformOutput)],
        positions: &[Position],
    ) -> Result<u64, CommitError>;

    /// After a failed commit: every held partition again as it was last
    /// committed (the reader is moved back there).
    fn rewind(&mut self) -> Result<Vec<Assigned>, ConnectorError>;

    /// Leave the group (the partitions go to the other members at once).
    fn close(&mut self);
}
