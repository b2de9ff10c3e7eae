//! Read one top-level field of a JSON record without building a DOM: the
//! other fields are skipped by the parser, nothing is allocated for them.
//! Enable with the `json` feature.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};

use crate::RecordError;

/// A field's value: a string (borrowed when it has no escapes) or a number.
#[derive(Debug, Clone, PartialEq)]
pub enum Field<'a> {
    Str(Cow<'a, str>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Null,
}

impl Field<'_> {
    /// The value as key bytes: strings as is, numbers and booleans as text.
    pub fn to_key(&self) -> Vec<u8> {
        match self {
            Field::Str(s) => s.as_bytes().to_vec(),
            Field::Int(i) => i.to_string().into_bytes(),
            Field::Float(f) => f.to_string().into_bytes(),
            Field::Bool(b) => b.to_string().into_bytes(),
            Field::Null => b"null".to_vec(),
        }
    }
}

/// The top-level field `name` of the JSON object in `value`; a bad record
/// when the value is not a JSON object or lacks the field.
pub fn field<'a>(value: &'a [u8], name: &str) -> Result<Field<'a>, RecordError> {
    let mut de = serde_json::Deserializer::from_slice(value);
    match Seed(name).deserialize(&mut de) {
        Ok(Some(f)) => Ok(f),
        Ok(None) => Err(RecordError::bad(format!("missing field `{name}`"))),
        Err(e) => Err(RecordError::bad(format!("not a JSON object: {e}"))),
    }
}

struct Seed<'n>(&'n str);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Option<Field<'de>>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Option<Field<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(is) = map.next_key_seed(KeyIs(self.0))? {
            if is && found.is_none() {
                found = Some(map.next_value_seed(FieldSeed)?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

struct KeyIs<'n>(&'n str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

struct FieldSeed;

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Field<'de>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Field<'de>, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, number, boolean or null")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Field<'de>, E> {
        Ok(Field::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Field<'de>, E> {
        Ok(Field::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Field<'de>, E> {
        Ok(Field::Int(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Field<'de>, E> {
        i64::try_from(v)
            .map(Field::Int)
            .map_err(|_| E::custom("number out of range"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Field<'de>, E> {
        Ok(Field::Float(v))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Field<'de>, E> {
        Ok(Field::Bool(v))
    }
    fn visit_unit<E>(self) -> Result<Field<'de>, E> {
        Ok(Field::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_without_touching_the_rest() {
        let v = br#"{"a":{"key":"inner"},"key":"user-7","n":3,"x":[1,{"y":2}]}"#;
        assert_eq!(
            field(v, "key").unwrap(),
            Field::Str(Cow::Borrowed("user-7"))
        );
        assert_eq!(field(v, "n").unwrap().to_key(), b"3");
        assert_eq!(field(br#"{"k":"a\"b"}"#, "k").unwrap().to_key(), br#"a"b"#);
        assert!(
            matches!(field(v, "zz"), Err(RecordError::Bad(m)) if m.contains("missing field `zz`"))
        );
        assert!(
            matches!(field(b"[1]", "k"), Err(RecordError::Bad(m)) if m.contains("not a JSON object"))
        );
    }
}

/// Typed records: a record's value read as a serde type, and a serde value
/// emitted. Records of a schema'd format (`value-format = "avro"`,
/// `"protobuf"`, `"json-schema"`) reach the guest as JSON, so a struct that
/// mirrors the schema reads them, and what it emits is encoded against the
/// sink's schema by the host.
impl crate::Record<'_> {
    /// The value as `T`; a bad record (with serde's reason, which names the
    /// field) when it does not deserialize.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, RecordError> {
        serde_json::from_slice(self.value())
            .map_err(|e| RecordError::bad(format!("value is not the expected JSON: {e}")))
    }
}

impl crate::Output<'_, '_> {
    /// Emit `value` as JSON, keeping key, headers and timestamp, written
    /// straight into the output buffer.
    pub fn emit_json<T: serde::Serialize>(&mut self, value: &T) -> Result<(), RecordError> {
        let mut failed = None;
        self.emit_with(|buf| {
            let start = buf.len();
            if let Err(e) = serde_json::to_writer(&mut *buf, value) {
                buf.truncate(start);
                failed = Some(e);
            }
        });
        match failed {
            None => Ok(()),
            // The partial output is rolled back with the record's others.
            Some(e) => Err(RecordError::bad(format!(
                "output does not serialize to JSON: {e}"
            ))),
        }
    }
}

#[cfg(test)]
mod typed_tests {
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize, Serialize)]
    struct Order {
        id: i64,
        item: String,
        #[serde(default)]
        qty: i32,
    }

    #[test]
    fn records_read_as_structs_and_structs_emit_as_json() {
        let run = crate::testing::flat_map(
            |r: &crate::Record<'_>, out: &mut crate::Output<'_, '_>| {
                let mut o: Order = r.json()?;
                o.item = o.item.to_uppercase();
                out.emit_json(&o)
            },
            &[r#"{"id":1,"item":"pen"}"#, r#"{"id":"x"}"#],
        )
        .unwrap();
        assert_eq!(run.values(), vec![r#"{"id":1,"item":"PEN","qty":0}"#]);
        assert_eq!(run.rejected.len(), 1);
        assert!(
            run.rejected[0].1.contains("invalid type"),
            "{:?}",
            run.rejected
        );
    }
}
