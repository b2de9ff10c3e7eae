//! What implements the engine's seams on the outside world: sources and
//! sinks (the embedded log, files, a rate generator, the console, Kafka)
//! and checkpoints on object storage.

pub mod checkpoints;
pub mod console;
pub mod file_sink;
pub mod file_source;
#[cfg(any(feature = "kafka", feature = "object-store"))]
pub mod hostname;
pub mod kafka;
pub mod log_sink;
pub mod log_source;
pub mod rate;

use weir_engine::ConnectorError;

fn err(context: impl std::fmt::Display) -> impl FnOnce(weir_log::LogError) -> ConnectorError {
    move |e| ConnectorError(format!("{context}: {e}"))
}

/// Share `limit` records among partitions in proportion to their lag (as
/// Spark's Kafka source does), always letting at least one record through.
pub(crate) fn rate_limited_ends(start: &[u64], upto: &[u64], limit: Option<u64>) -> Vec<u64> {
    let lags: Vec<u64> = start
        .iter()
        .zip(upto)
        .map(|(s, u)| u.saturating_sub(*s))
        .collect();
    let total: u64 = lags.iter().sum();
    let Some(limit) = limit.filter(|l| *l < total) else {
        return start.iter().zip(&lags).map(|(s, l)| s + l).collect();
    };
    let mut ends: Vec<u64> = start
        .iter()
        .zip(&lags)
        .map(|(s, l)| s + ((*l as u128 * limit as u128) / total as u128) as u64)
        .collect();
    if ends == start {
        let (p, _) = lags
            .iter()
            .enumerate()
            .rev()
            .max_by_key(|(_, l)| **l)
            .expect("some lag");
        ends[p] += 1;
    }
    ends
}

/// The input a micro-batch reads at most by default (files: cut at a line
/// boundary to fit; the embedded log and Kafka: estimated from their
/// average record size), so a backlog does not become one batch as large as itself. 16 MiB
/// keeps W1's peak memory flat at about 120 MB from 1 to 4 M records
/// (BENCHMARKS); 64 MiB was faster on 1 M records but reached 390 MB on 4 M.
pub const DEFAULT_MAX_BYTES_PER_TRIGGER: u64 = 16 << 20;

/// The tighter of two optional limits.
pub(crate) fn min_limit(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::rate_limited_ends;

    #[test]
    fn limit_is_shared_by_lag() {
        assert_eq!(rate_limited_ends(&[0, 0], &[90, 10], Some(50)), vec![45, 5]);
        assert_eq!(rate_limited_ends(&[0, 0], &[90, 10], None), vec![90, 10]);
        assert_eq!(rate_limited_ends(&[5, 0], &[6, 1], Some(1)), vec![6, 0]);
        assert_eq!(rate_limited_ends(&[3, 3], &[3, 3], Some(10)), vec![3, 3]);
    }
}
