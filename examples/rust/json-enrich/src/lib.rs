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

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use weir_guest::{Config, Output, Record, RecordError, Transform};

#[derive(Default)]
pub struct JsonEnrich {
    select: Option<Vec<String>>,
    drop: Vec<String>,
    rename: Vec<(String, String)>,
    uppercase: Vec<String>,
    set: Vec<(String, String)>,
    add_source: bool,
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// A JSON object's top-level fields in document order, values left as raw
/// JSON text: every operation here is top-level, so nested values are
/// validated but never materialised.
struct Fields<'a>(Vec<(Cow<'a, str>, Cow<'a, RawValue>)>);

impl<'de> serde::Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some((k, v)) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    out.push((k, Cow::Borrowed(v)));
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn raw(json: String) -> Cow<'static, RawValue> {
    Cow::Owned(RawValue::from_string(json).expect("serialized JSON is valid"))
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
                        let value = serde_json::from_str::<Value>(v)
                            .unwrap_or_else(|_| Value::String(v.clone()));
                        t.set.push((field.to_string(), value.to_string()));
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
        let Fields(mut fields) = serde_json::from_slice(record.value()).map_err(|e| {
            if e.classify() == serde_json::error::Category::Data {
                RecordError::bad("value is JSON but not an object")
            } else {
                RecordError::bad(format!("value is not JSON: {e}"))
            }
        })?;
        if let Some(keep) = &self.select {
            fields.retain(|(k, _)| keep.iter().any(|s| s == k));
        }
        fields.retain(|(k, _)| !self.drop.iter().any(|d| d == k));
        for (old, new) in &self.rename {
            if let Some(i) = fields.iter().position(|(k, _)| k == old) {
                let (_, v) = fields.remove(i);
                fields.retain(|(k, _)| k != new);
                fields.push((Cow::Owned(new.clone()), v));
            }
        }
        for f in &self.uppercase {
            for (k, v) in fields.iter_mut() {
                if k == f
                    && let Ok(mut s) = serde_json::from_str::<String>(v.get())
                {
                    s.make_ascii_uppercase();
                    *v = raw(serde_json::to_string(&s).expect("a string serializes"));
                }
            }
        }
        for (f, json) in &self.set {
            fields.retain(|(k, _)| k != f);
            fields.push((Cow::Owned(f.clone()), raw(json.clone())));
        }
        if self.add_source {
            let p = record.position();
            let src = format!(
                r#"{{"partition":{},"offset":{},"timestamp":{}}}"#,
                p.partition,
                p.offset,
                record.timestamp()
            );
            fields.retain(|(k, _)| k != "_source");
            fields.push((Cow::Borrowed("_source"), raw(src)));
        }
        out.emit_with(|buf| {
            buf.push(b'{');
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                serde_json::to_writer(&mut *buf, k).expect("writing to a Vec cannot fail");
                buf.push(b':');
                buf.extend_from_slice(v.get().as_bytes());
            }
            buf.push(b'}');
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
