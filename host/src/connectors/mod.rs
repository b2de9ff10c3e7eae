//! Sources and sinks that implement the engine's seams: the embedded log,
//! files, a rate generator and the console.

pub mod console;
pub mod file_sink;
pub mod file_source;
pub mod log_sink;
pub mod log_source;
pub mod rate;

use crate::engine::ConnectorError;

fn err(context: impl std::fmt::Display) -> impl FnOnce(crate::log::LogError) -> ConnectorError {
    move |e| ConnectorError(format!("{context}: {e}"))
}

/// Offsets kept as a JSON array of integers, one per partition.
pub(crate) fn parse_offsets(
    o: &serde_json::Value,
    partitions: usize,
) -> Result<Vec<u64>, ConnectorError> {
    let arr = o
        .as_array()
        .filter(|a| a.len() == partitions)
        .ok_or_else(|| {
            ConnectorError(format!(
                "offset {o} is not a list of {partitions} partition offsets"
            ))
        })?;
    arr.iter()
        .map(|v| {
            v.as_u64()
                .ok_or_else(|| ConnectorError(format!("offset {o} holds a non-integer")))
        })
        .collect()
}
