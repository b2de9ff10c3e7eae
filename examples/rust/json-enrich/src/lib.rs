//! Reshapes and enriches JSON objects.
//!
//! Config (every key optional; applied in this order):
//! - `select`: comma-separated fields to keep (others are dropped);
//! - `drop`: comma-separated fields to remove;
//! - `rename.<old>`: new name for field `<old>`;
//! - `uppercase`: comma-separated string fields to uppercase;
//! - `set.<field>`: a JSON value to set (a bare word is a string);
//! - `add-source`: `true` adds `"_source": {"partition", "offset", "timestamp"}`.
//!
//! A value that is not a JSON object is a bad record.

use serde_json::{Map, Value};
use weir_guest::{Config, Output, Record, RecordError, Transform};

#[derive(Default)]
pub struct JsonEnrich {
    select: Option<Vec<String>>,
    drop: Vec<String>,
    rename: Vec<(String, String)>,
    uppercase: Vec<String>,
    set: Vec<(String, Value)>,
    add_source: bool,
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl Transform for JsonEnrich {
    fn init(config: &Config) -> Result<Self, String> {
        let mut t = JsonEnrich::default();
        for (k, v) in config.pairs() {
            match k.as_str() {
                "select" => t.select = Some(list(v)),
                "drop" => t.drop = list(v),
                "uppercase" => t.uppercase = list(v),
                "add-source" => {
                    t.add_source = v.parse().map_err(|_| {
                        format!("config `add-source`: expected true or false, got `{v}`")
                    })?
                }
                _ => {
                    if let Some(old) = k.strip_prefix("rename.") {
                        t.rename.push((old.to_string(), v.clone()));
                    } else if let Some(field) = k.strip_prefix("set.") {
                        let value =
                            serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.clone()));
                        t.set.push((field.to_string(), value));
                    } else {
                        return Err(format!(
                            "unknown config key `{k}` (accepted: select, drop, rename.<field>, uppercase, set.<field>, add-source)"
                        ));
                    }
                }
            }
        }
        Ok(t)
    }

    fn process(
        &mut self,
        record: &Record<'_>,
        out: &mut Output<'_, '_>,
    ) -> Result<(), RecordError> {
        let mut obj: Map<String, Value> = match serde_json::from_slice(record.value()) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(RecordError::bad("value is JSON but not an object")),
            Err(e) => return Err(RecordError::bad(format!("value is not JSON: {e}"))),
        };
        if let Some(keep) = &self.select {
            obj.retain(|k, _| keep.contains(k));
        }
        for f in &self.drop {
            obj.shift_remove(f);
        }
        for (old, new) in &self.rename {
            if let Some(v) = obj.shift_remove(old) {
                obj.insert(new.clone(), v);
            }
        }
        for f in &self.uppercase {
            if let Some(Value::String(s)) = obj.get_mut(f) {
                s.make_ascii_uppercase();
            }
        }
        for (f, v) in &self.set {
            obj.insert(f.clone(), v.clone());
        }
        if self.add_source {
            let p = record.position();
            obj.insert(
                "_source".into(),
                serde_json::json!({"partition": p.partition, "offset": p.offset, "timestamp": record.timestamp()}),
            );
        }
        out.emit_with(|buf| {
            serde_json::to_writer(buf, &obj).expect("writing JSON to a Vec cannot fail");
        });
        Ok(())
    }
}

weir_guest::export!(JsonEnrich);

#[cfg(test)]
mod tests {
    use super::JsonEnrich;
    use weir_guest::testing::{init, run_values};

    #[test]
    fn reshapes_in_order() {
        let mut t = init::<JsonEnrich>(&[
            ("drop", "secret"),
            ("rename.value", "text"),
            ("uppercase", "text"),
            ("set.version", "2"),
        ])
        .unwrap();
        let run = run_values(&mut t, &[r#"{"id":1,"value":"abc","secret":"x"}"#]).unwrap();
        assert_eq!(run.values(), vec![r#"{"id":1,"text":"ABC","version":2}"#]);
    }

    #[test]
    fn select_and_source() {
        let mut t = init::<JsonEnrich>(&[("select", "id"), ("add-source", "true")]).unwrap();
        let run = run_values(&mut t, &[r#"{"id":1,"value":"abc"}"#]).unwrap();
        assert_eq!(
            run.values(),
            vec![r#"{"id":1,"_source":{"partition":0,"offset":0,"timestamp":0}}"#]
        );
    }

    #[test]
    fn non_objects_are_bad_records() {
        let mut t = init::<JsonEnrich>(&[]).unwrap();
        let run = run_values(&mut t, &["[1]", "nope", "{}"]).unwrap();
        assert_eq!(run.values(), vec!["{}"]);
        assert_eq!(
            run.rejected.iter().map(|r| r.0).collect::<Vec<_>>(),
            vec![0, 1]
        );
    }

    #[test]
    fn unknown_key_refused() {
        let err = init::<JsonEnrich>(&[("uppercse", "x")]).err().unwrap();
        assert!(err.contains("`uppercse`"));
    }
}
