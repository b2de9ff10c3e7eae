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

/// A field name: as it stood between quotes in the input (no escapes, so
/// it is written back verbatim), or a name from config to escape.
enum Key<'a> {
    Verbatim(&'a str),
    Named(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Verbatim(k) => k,
            Key::Named(k) => k,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            // serde_json lends a name without escapes straight from the input.
            fn visit_borrowed_str<E>(self, k: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Verbatim(k))
            }
            fn visit_str<E>(self, k: &str) -> Result<Key<'de>, E> {
                Ok(Key::Named(k.to_string()))
            }
        }
        d.deserialize_str(V)
    }
}

/// A field value as JSON text: borrowed from the input, a string from the
/// input uppercased as it is written, or built here.
enum Val<'a> {
    Raw(&'a RawValue),
    UpperRaw(&'a RawValue),
    Json(String),
}

/// A JSON object's top-level fields in document order, values left as raw
/// JSON text: every operation here is top-level, so nested values are
/// validated but never materialised.
struct Fields<'a>(Vec<(Key<'a>, Val<'a>)>);

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
                while let Some((k, v)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    out.push((k, Val::Raw(v)));
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(V)
    }
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
        // One UTF-8 check for the whole value: parsing from a `str` then
        // skips checking each string again.
        let text = std::str::from_utf8(record.value())
            .map_err(|e| RecordError::bad(format!("value is not JSON: {e}")))?;
        let Fields(mut fields) = serde_json::from_str(text).map_err(|e| {
            if e.classify() == serde_json::error::Category::Data {
                RecordError::bad("value is JSON but not an object")
            } else {
                RecordError::bad(format!("value is not JSON: {e}"))
            }
        })?;
        if let Some(keep) = &self.select {
            fields.retain(|(k, _)| keep.iter().any(|s| s == k.as_str()));
        }
        fields.retain(|(k, _)| !self.drop.iter().any(|d| d == k.as_str()));
        for (old, new) in &self.rename {
            if let Some(i) = fields.iter().position(|(k, _)| k.as_str() == old) {
                let (_, v) = fields.remove(i);
                fields.retain(|(k, _)| k.as_str() != new);
                fields.push((Key::Named(new.clone()), v));
            }
        }
        for f in &self.uppercase {
            for (k, v) in fields.iter_mut() {
                if k.as_str() != f {
                    continue;
                }
                // Only strings are uppercased.
                if let Val::Raw(raw) = *v
                    && raw.get().starts_with('"')
                {
                    *v = Val::UpperRaw(raw);
                }
            }
        }
        for (f, json) in &self.set {
            fields.retain(|(k, _)| k.as_str() != f);
            fields.push((Key::Named(f.clone()), Val::Json(json.clone())));
        }
        if self.add_source {
            let p = record.position();
            let src = format!(
                r#"{{"partition":{},"offset":{},"timestamp":{}}}"#,
                p.partition,
                p.offset,
                record.timestamp()
            );
            fields.retain(|(k, _)| k.as_str() != "_source");
            fields.push((Key::Named("_source".into()), Val::Json(src)));
        }
        out.emit_with(|buf| {
            buf.push(b'{');
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                match k {
                    Key::Verbatim(k) => {
                        buf.push(b'"');
                        buf.extend_from_slice(k.as_bytes());
                        buf.push(b'"');
                    }
                    Key::Named(k) => {
                        serde_json::to_writer(&mut *buf, k).expect("writing to a Vec cannot fail")
                    }
                }
                buf.push(b':');
                match v {
                    Val::Raw(raw) => buf.extend_from_slice(raw.get().as_bytes()),
                    Val::UpperRaw(raw) => upper_string(buf, raw.get()),
                    Val::Json(json) => buf.extend_from_slice(json.as_bytes()),
                }
            }
            buf.push(b'}');
        });
        Ok(())
    }
}

/// Append JSON string `json` uppercased. Without escapes that is its text
/// with ASCII letters uppercased (quotes and multi-byte characters stay as
/// they are); with escapes it is decoded and re-encoded.
fn upper_string(buf: &mut Vec<u8>, json: &str) {
    if json.as_bytes().contains(&b'\\') {
        let mut s: String = serde_json::from_str(json).expect("parsed as a JSON string");
        s.make_ascii_uppercase();
        serde_json::to_writer(&mut *buf, &s).expect("writing to a Vec cannot fail");
    } else {
        let at = buf.len();
        buf.extend_from_slice(json.as_bytes());
        buf[at..].make_ascii_uppercase();
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
    fn uppercase_keeps_escapes_and_other_characters() {
        let mut t = init::<JsonEnrich>(&[("uppercase", "v")]).unwrap();
        let run = run_values(
            &mut t,
            &[
                r#"{"v":"a\nb\u00e9c","k\"q":1}"#,
                r#"{"v":"é-x\"y"}"#,
                r#"{"v":"plain é z","w":"q"}"#,
                r#"{"v":[1,"a"]}"#,
            ],
        )
        .unwrap();
        assert_eq!(
            run.values(),
            vec![
                r#"{"v":"A\nBéC","k\"q":1}"#,
                r#"{"v":"é-X\"Y"}"#,
                r#"{"v":"PLAIN é Z","w":"q"}"#,
                r#"{"v":[1,"a"]}"#,
            ]
        );
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
