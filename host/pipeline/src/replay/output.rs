//! One batch's output of one sink, read back (live or scratch), and the
//! comparison of the two.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;

use serde::Serialize;

use super::{ReplayError, io};
use weir_connectors::log_sink::LogSink;
use weir_engine::Sink;

use crate::BuildError;
use crate::spec::SinkSpec;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct OutputDiff {
    /// The named output; `None` is the default one.
    pub output: Option<String>,
    pub candidate_rows: u64,
    /// `None` when the live output cannot be read back (Kafka, console).
    pub live_rows: Option<u64>,
    /// Live records the candidate did not make.
    pub missing: u64,
    /// Candidate records the live output does not have.
    pub extra: u64,
    /// `max(missing, extra)`: a changed record counts once.
    pub differing: u64,
    /// The first of them, a missing and an extra record side by side.
    pub first_differences: Vec<Difference>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Difference {
    /// Position in the live output, for a missing record.
    pub live_index: Option<u64>,
    pub live: Option<String>,
    /// Position in the candidate's output, for an extra record.
    pub candidate_index: Option<u64>,
    pub candidate: Option<String>,
}

/// The committed records of `sink` (the query `query_id`'s output
/// `route`) of each batch in `batches`, as text; a batch that committed
/// nothing has none. `None` when the sink cannot be read back.
pub(super) fn read(
    sink: &SinkSpec,
    query_id: &str,
    route: &Option<String>,
    batches: RangeInclusive<u64>,
) -> Result<Option<BTreeMap<u64, Vec<String>>>, ReplayError> {
    let mut sink = committed_output(route, sink).map_err(|e| io(e.to_string()))?;
    sink.read_back(query_id, batches).map_err(io)
}

/// `route`'s sink as it stands, to read back what was committed to it
/// (`weir replay`): nothing is created or claimed, a log topic that does
/// not exist yet reads as empty.
fn committed_output(route: &Option<String>, s: &SinkSpec) -> Result<Box<dyn Sink>, BuildError> {
    let route_name = route.as_deref().unwrap_or("default");
    Ok(match s {
        SinkSpec::Log { root, topic, .. } => {
            Box::new(LogSink::existing(root.clone(), topic, route_name)?)
        }
        _ => crate::query::build_sink(route, s)?,
    })
}

/// Why an output was not compared.
pub(super) fn unreadable(route: &Option<String>, sink: &SinkSpec) -> String {
    let kind = match sink {
        SinkSpec::Kafka(_) => "a Kafka sink",
        _ => "the console",
    };
    format!(
        "output `{}` goes to {kind}, whose committed records weir does not read back: only the candidate's are shown",
        route.as_deref().unwrap_or("default")
    )
}

/// Compare the live and candidate records of one output as multisets.
pub(super) fn diff(
    route: &Option<String>,
    live: Option<Vec<String>>,
    made: Vec<String>,
    shown: usize,
) -> OutputDiff {
    let Some(live) = live else {
        return OutputDiff {
            output: route.clone(),
            candidate_rows: made.len() as u64,
            live_rows: None,
            missing: 0,
            extra: 0,
            differing: 0,
            first_differences: vec![],
        };
    };
    let missing = unmatched(&live, &made);
    let extra = unmatched(&made, &live);
    let first_differences = (0..missing.len().max(extra.len()))
        .take(shown)
        .map(|i| Difference {
            live_index: missing.get(i).map(|&j| j as u64),
            live: missing.get(i).map(|&j| live[j].clone()),
            candidate_index: extra.get(i).map(|&j| j as u64),
            candidate: extra.get(i).map(|&j| made[j].clone()),
        })
        .collect();
    OutputDiff {
        output: route.clone(),
        candidate_rows: made.len() as u64,
        live_rows: Some(live.len() as u64),
        missing: missing.len() as u64,
        extra: extra.len() as u64,
        differing: missing.len().max(extra.len()) as u64,
        first_differences,
    }
}

/// Positions in `a` of the records `b` does not match (each record of `b`
/// matches one equal record of `a`, first come first matched).
fn unmatched(a: &[String], b: &[String]) -> Vec<usize> {
    let mut left: HashMap<&str, usize> = HashMap::new();
    for r in b {
        *left.entry(r.as_str()).or_default() += 1;
    }
    let mut out = Vec::new();
    for (i, r) in a.iter().enumerate() {
        match left.get_mut(r.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(i),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_changed_record_counts_once_and_order_does_not_matter() {
        let d = diff(
            &None,
            Some(s(&["a", "b", "c", "b"])),
            s(&["b", "a", "B", "c"]),
            5,
        );
        assert_eq!((d.missing, d.extra, d.differing), (1, 1, 1));
        assert_eq!(d.first_differences[0].live.as_deref(), Some("b"));
        assert_eq!(d.first_differences[0].live_index, Some(3));
        assert_eq!(d.first_differences[0].candidate.as_deref(), Some("B"));
        assert_eq!(d.first_differences[0].candidate_index, Some(2));
    }

    #[test]
    fn dropped_and_added_records_and_the_shown_cap() {
        let d = diff(&Some("x".into()), Some(s(&["a", "b", "c"])), s(&["a"]), 1);
        assert_eq!((d.missing, d.extra, d.differing), (2, 0, 2));
        assert_eq!(d.first_differences.len(), 1);
        assert!(d.first_differences[0].candidate.is_none());
        let same = diff(&None, Some(s(&["a", "a"])), s(&["a", "a"]), 5);
        assert_eq!(same.differing, 0);
        assert!(same.first_differences.is_empty());
        let unread = diff(&None, None, s(&["a"]), 5);
        assert_eq!((unread.live_rows, unread.candidate_rows), (None, 1));
    }
}
