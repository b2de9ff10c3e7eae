//! One batch's output of one sink, read back (live or scratch), and the
//! comparison of the two.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;

use serde::Serialize;

use super::{ReplayError, io};
use crate::connectors::{file_sink, log_sink};
use crate::engine::RecordBatch;
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
/// `route`) of each batch in `batches`, as text: a file sink's lines, a
/// log record as JSON with its key, value and headers; a batch that
/// committed nothing has none. `None` when the sink cannot be read back.
pub(super) fn read(
    sink: &SinkSpec,
    query_id: &str,
    route: &Option<String>,
    batches: RangeInclusive<u64>,
) -> Result<Option<BTreeMap<u64, Vec<String>>>, ReplayError> {
    let mut out: BTreeMap<u64, Vec<String>> = batches.clone().map(|n| (n, vec![])).collect();
    match sink {
        SinkSpec::Files { dir, .. } => {
            for (n, lines) in out.iter_mut() {
                let read = file_sink::read_batch(dir, *n).map_err(io)?;
                let text = |l: Vec<u8>| String::from_utf8_lossy(&l).into_owned();
                *lines = read.unwrap_or_default().into_iter().map(text).collect();
            }
        }
        SinkSpec::Log { root, topic, .. } => {
            if !root.join(topic).exists() {
                return Ok(Some(out));
            }
            let mut t = crate::log::Topic::open(root, topic).map_err(io)?;
            let writer = log_sink::writer_id(query_id, route.as_deref().unwrap_or("default"));
            for (n, (start, end)) in t.committed_ranges(&writer, batches).map_err(io)? {
                let records = out.entry(n).or_default();
                for (p, (s, e)) in start.iter().zip(&end).enumerate() {
                    let mut b = RecordBatch::new(p as u32);
                    t.read(p as u32, *s, *e, &mut b).map_err(io)?;
                    records.extend((0..b.len()).map(|i| render(&b, i)));
                }
            }
        }
        SinkSpec::Console | SinkSpec::Kafka(_) => return Ok(None),
    }
    Ok(Some(out))
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

/// A log record as one line of JSON.
fn render(b: &RecordBatch, i: usize) -> String {
    let r = b.get(i);
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    let mut o = serde_json::json!({
        "key": r.key.map(text),
        "value": r.value_opt().map(text),
    });
    if !r.headers.is_empty() {
        o["headers"] = r
            .headers()
            .map(|(n, v)| serde_json::json!([n, text(v)]))
            .collect();
    }
    o.to_string()
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
