//! Keeps JSON records whose field satisfies a predicate; drops the rest.
//!
//! Config:
//! - `field`: a top-level field name, or a JSON pointer such as `/user/age`;
//! - `op`: `eq` (default), `ne`, `gt`, `ge`, `lt`, `le`, `contains`, `exists`;
//! - `value`: the operand, as JSON (`42`, `"eu"`, `true`); a bare word that
//!   is not valid JSON is taken as a string.
//!
//! A value that is not JSON is a bad record (the pipeline's error policy
//! decides its fate); a record without the field fails the predicate.

use serde_json::Value;
use weir_guest::{Config, Output, Record, RecordError, Transform};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Contains,
    Exists,
}

pub struct JsonFilter {
    pointer: String,
    op: Op,
    operand: Value,
}

fn pointer_for(field: &str) -> String {
    if field.starts_with('/') {
        field.to_string()
    } else {
        format!("/{}", field.replace('~', "~0").replace('/', "~1"))
    }
}

impl JsonFilter {
    fn matches(&self, doc: &Value) -> bool {
        let Some(v) = doc.pointer(&self.pointer) else {
            return false;
        };
        let ord = || match (v.as_f64(), self.operand.as_f64()) {
            (Some(a), Some(b)) => a.partial_cmp(&b),
            _ => match (v.as_str(), self.operand.as_str()) {
                (Some(a), Some(b)) => Some(a.cmp(b)),
                _ => None,
            },
        };
        use std::cmp::Ordering::*;
        match self.op {
            Op::Exists => true,
            Op::Eq => ord().map_or(v == &self.operand, |o| o == Equal),
            Op::Ne => ord().map_or(v != &self.operand, |o| o != Equal),
            Op::Gt => ord() == Some(Greater),
            Op::Ge => matches!(ord(), Some(Greater | Equal)),
            Op::Lt => ord() == Some(Less),
            Op::Le => matches!(ord(), Some(Less | Equal)),
            Op::Contains => match (v, &self.operand) {
                (Value::String(s), Value::String(needle)) => s.contains(needle.as_str()),
                (Value::Array(items), x) => items.contains(x),
                _ => false,
            },
        }
    }
}

impl Transform for JsonFilter {
    fn init(config: &Config) -> Result<Self, String> {
        config.only(&["field", "op", "value"])?;
        let field = config.require("field")?;
        let op = match config.get("op").unwrap_or("eq") {
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "gt" => Op::Gt,
            "ge" => Op::Ge,
            "lt" => Op::Lt,
            "le" => Op::Le,
            "contains" => Op::Contains,
            "exists" => Op::Exists,
            other => {
                return Err(format!(
                    "config `op`: unknown operator `{other}` (use eq, ne, gt, ge, lt, le, contains, exists)"
                ));
            }
        };
        let operand = match (op, config.get("value")) {
            (Op::Exists, _) => Value::Null,
            (_, None) => return Err("missing config key `value`".into()),
            (_, Some(raw)) => {
                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
            }
        };
        Ok(JsonFilter {
            pointer: pointer_for(field),
            op,
            operand,
        })
    }

    fn process(
        &mut self,
        record: &Record<'_>,
        out: &mut Output<'_, '_>,
    ) -> Result<(), RecordError> {
        let doc: Value = serde_json::from_slice(record.value())
            .map_err(|e| RecordError::bad(format!("value is not JSON: {e}")))?;
        if self.matches(&doc) {
            out.forward();
        }
        Ok(())
    }
}

weir_guest::export!(JsonFilter);

#[cfg(test)]
mod tests {
    use super::JsonFilter;
    use weir_guest::testing::{init, run_values};

    fn filter(config: &[(&str, &str)], input: &[&str]) -> Vec<String> {
        let mut t = init::<JsonFilter>(config).unwrap();
        let run = run_values(&mut t, input).unwrap();
        run.values().into_iter().map(String::from).collect()
    }

    #[test]
    fn numeric_comparison() {
        let got = filter(
            &[("field", "age"), ("op", "ge"), ("value", "18")],
            &[
                r#"{"age":17}"#,
                r#"{"age":18}"#,
                r#"{"age":30.5}"#,
                r#"{"x":1}"#,
            ],
        );
        assert_eq!(got, vec![r#"{"age":18}"#, r#"{"age":30.5}"#]);
    }

    #[test]
    fn string_equality_with_bare_word_and_pointer() {
        let got = filter(
            &[("field", "/user/region"), ("value", "eu")],
            &[r#"{"user":{"region":"eu"}}"#, r#"{"user":{"region":"us"}}"#],
        );
        assert_eq!(got, vec![r#"{"user":{"region":"eu"}}"#]);
    }

    #[test]
    fn malformed_json_is_a_bad_record() {
        let mut t = init::<JsonFilter>(&[("field", "a"), ("op", "exists")]).unwrap();
        let run = run_values(&mut t, &["{not json", r#"{"a":1}"#]).unwrap();
        assert_eq!(run.values(), vec![r#"{"a":1}"#]);
        assert_eq!(run.rejected.len(), 1);
        assert!(run.rejected[0].1.contains("not JSON"));
    }

    #[test]
    fn bad_config_is_refused_with_the_key() {
        let err = init::<JsonFilter>(&[("field", "a"), ("op", "like"), ("value", "x")])
            .err()
            .unwrap();
        assert!(err.contains("`like`"), "{err}");
        let err = init::<JsonFilter>(&[("feild", "a")]).err().unwrap();
        assert!(err.contains("`feild`"), "{err}");
    }
}
