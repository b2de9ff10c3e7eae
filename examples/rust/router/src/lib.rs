//! Routes JSON records to named outputs by the value of one field.
//!
//! Config:
//! - `field`: top-level field whose value (string, number or bool) picks the output;
//! - `route.<value>`: output for that value; values without a route go to an
//!   output named after the value itself unless `strict = true`;
//! - `strict`: `true` sends unmapped values to the default output;
//! - `missing`: output for records without the field (default: the default
//!   output); `missing = reject` makes them bad records instead.

use std::collections::HashMap;

use serde_json::Value;
use weir_guest::{Config, Output, Record, RecordError, Transform};

pub struct Router {
    field: String,
    routes: HashMap<String, String>,
    strict: bool,
    missing: Missing,
}

enum Missing {
    Default,
    Reject,
    To(String),
}

impl Transform for Router {
    fn init(config: &Config) -> Result<Self, String> {
        let mut routes = HashMap::new();
        let mut field = None;
        let mut strict = false;
        let mut missing = Missing::Default;
        for (k, v) in config.pairs() {
            match k.as_str() {
                "field" => field = Some(v.clone()),
                "strict" => {
                    strict = v.parse().map_err(|_| {
                        format!("config `strict`: expected true or false, got `{v}`")
                    })?
                }
                "missing" => {
                    missing = match v.as_str() {
                        "reject" => Missing::Reject,
                        "" => Missing::Default,
                        out => Missing::To(out.to_string()),
                    }
                }
                _ => match k.strip_prefix("route.") {
                    Some(value) => {
                        routes.insert(value.to_string(), v.clone());
                    }
                    None => {
                        return Err(format!(
                            "unknown config key `{k}` (accepted: field, route.<value>, strict, missing)"
                        ));
                    }
                },
            }
        }
        let field = field.ok_or("missing config key `field`")?;
        Ok(Router {
            field,
            routes,
            strict,
            missing,
        })
    }

    fn process(
        &mut self,
        record: &Record<'_>,
        out: &mut Output<'_, '_>,
    ) -> Result<(), RecordError> {
        let doc: Value = serde_json::from_slice(record.value())
            .map_err(|e| RecordError::bad(format!("value is not JSON: {e}")))?;
        let key = match doc.get(&self.field) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Some(v.to_string()),
            _ => None,
        };
        match key {
            Some(k) => match self.routes.get(&k) {
                Some(output) => out.forward_to(output),
                None if self.strict => out.forward(),
                None => out.forward_to(&k),
            },
            None => match &self.missing {
                Missing::Default => out.forward(),
                Missing::To(o) => out.forward_to(o),
                Missing::Reject => {
                    return Err(RecordError::bad(format!(
                        "field `{}` is missing",
                        self.field
                    )));
                }
            },
        }
        Ok(())
    }
}

weir_guest::export!(Router);

#[cfg(test)]
mod tests {
    use super::Router;
    use weir_guest::testing::{init, run_values};

    #[test]
    fn routes_by_field() {
        let mut t = init::<Router>(&[
            ("field", "region"),
            ("route.eu", "europe"),
            ("missing", "unknown"),
        ])
        .unwrap();
        let run = run_values(&mut t, &[r#"{"region":"eu"}"#, r#"{"region":"us"}"#, "{}"]).unwrap();
        let outs: Vec<_> = run.emitted.iter().map(|e| e.output.clone()).collect();
        assert_eq!(
            outs,
            vec![
                Some("europe".into()),
                Some("us".into()),
                Some("unknown".into())
            ]
        );
    }

    #[test]
    fn strict_and_reject() {
        let mut t = init::<Router>(&[
            ("field", "n"),
            ("route.1", "one"),
            ("strict", "true"),
            ("missing", "reject"),
        ])
        .unwrap();
        let run = run_values(&mut t, &[r#"{"n":1}"#, r#"{"n":2}"#, "{}"]).unwrap();
        let outs: Vec<_> = run.emitted.iter().map(|e| e.output.clone()).collect();
        assert_eq!(outs, vec![Some("one".into()), None]);
        assert_eq!(run.rejected[0].0, 2);
    }
}
