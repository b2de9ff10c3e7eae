//! A window's running aggregate, as kept in state and written to output.

use super::Aggregation;

/// Numbers are 64-bit floats; integer inputs print as integers while the
/// result is exact (below 2^53), as a sum of counts or ids would.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// Encoded size in state: count, value, whether every input was an integer.
pub(super) const ENCODED: usize = 17;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Acc {
    pub count: u64,
    /// Sum (sum, avg), smallest (min) or largest (max) value so far.
    pub value: f64,
    pub integers: bool,
}

/// One record's contribution: its number (none for a count).
#[derive(Debug, Clone, Copy)]
pub(super) struct Input {
    pub value: f64,
    pub integer: bool,
}

impl Acc {
    pub fn zero() -> Acc {
        Acc {
            count: 0,
            value: 0.0,
            integers: true,
        }
    }

    pub fn add(&mut self, agg: &Aggregation, input: Option<Input>) {
        let Some(x) = input else {
            self.count += 1;
            return;
        };
        self.merge(
            agg,
            Acc {
                count: 1,
                value: x.value,
                integers: x.integer,
            },
        );
    }

    pub fn merge(&mut self, agg: &Aggregation, other: Acc) {
        if other.count == 0 {
            return;
        }
        self.value = match (agg, self.count) {
            (_, 0) => other.value,
            (Aggregation::Min(_), _) => self.value.min(other.value),
            (Aggregation::Max(_), _) => self.value.max(other.value),
            _ => self.value + other.value,
        };
        self.count += other.count;
        self.integers &= other.integers;
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.value.to_le_bytes());
        out.push(u8::from(self.integers));
    }

    pub fn decode(b: &[u8]) -> Option<Acc> {
        if b.len() != ENCODED {
            return None;
        }
        Some(Acc {
            count: u64::from_le_bytes(b[..8].try_into().ok()?),
            value: f64::from_le_bytes(b[8..16].try_into().ok()?),
            integers: b[16] != 0,
        })
    }

    /// The aggregate's JSON value.
    pub fn write_result(&self, agg: &Aggregation, out: &mut Vec<u8>) {
        let number = |v: f64, integer: bool, out: &mut Vec<u8>| {
            if integer && v.abs() < EXACT {
                out.extend_from_slice((v as i64).to_string().as_bytes());
            } else if v.is_finite() {
                out.extend_from_slice(format!("{v:?}").as_bytes());
            } else {
                out.extend_from_slice(b"null");
            }
        };
        match agg {
            Aggregation::Count => out.extend_from_slice(self.count.to_string().as_bytes()),
            Aggregation::Avg(_) => number(self.value / self.count.max(1) as f64, false, out),
            _ => number(self.value, self.integers, out),
        }
    }
}

/// A record's number at a field: a JSON number (or a string holding one).
pub(super) fn parse_number(text: &[u8]) -> Option<Input> {
    let s = std::str::from_utf8(text).ok()?.trim();
    let integer = !s.contains(['.', 'e', 'E']);
    let value: f64 = s.parse().ok()?;
    value.is_finite().then_some(Input { value, integer })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(agg: &Aggregation, xs: &[&str]) -> Acc {
        let mut acc = Acc::zero();
        for x in xs {
            acc.add(agg, parse_number(x.as_bytes()));
        }
        acc
    }

    fn result(agg: &Aggregation, acc: &Acc) -> String {
        let mut out = Vec::new();
        acc.write_result(agg, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn results_print_as_their_inputs_were() {
        let sum = Aggregation::Sum(vec!["x".into()]);
        assert_eq!(result(&sum, &fold(&sum, &["1", "2", "40"])), "43");
        assert_eq!(result(&sum, &fold(&sum, &["1", "2.5"])), "3.5");
        let min = Aggregation::Min(vec!["x".into()]);
        assert_eq!(result(&min, &fold(&min, &["5", "-3", "9"])), "-3");
        let max = Aggregation::Max(vec!["x".into()]);
        assert_eq!(result(&max, &fold(&max, &["5", "-3", "9.25"])), "9.25");
        let avg = Aggregation::Avg(vec!["x".into()]);
        assert_eq!(result(&avg, &fold(&avg, &["1", "2"])), "1.5");
        assert_eq!(
            result(&Aggregation::Count, &fold(&Aggregation::Count, &[])),
            "0"
        );
        assert!(parse_number(b"\"abc\"").is_none() && parse_number(b"abc").is_none());
    }

    #[test]
    fn merged_partial_aggregates_equal_one_fold_and_survive_encoding() {
        for agg in [
            Aggregation::Count,
            Aggregation::Sum(vec![]),
            Aggregation::Min(vec![]),
            Aggregation::Max(vec![]),
        ] {
            let xs = ["3", "-7", "12", "0", "5"];
            let whole = fold(&agg, &xs);
            let mut parts = fold(&agg, &xs[..2]);
            parts.merge(&agg, fold(&agg, &xs[2..]));
            let mut bytes = Vec::new();
            parts.encode(&mut bytes);
            assert_eq!(Acc::decode(&bytes), Some(whole));
        }
    }
}
