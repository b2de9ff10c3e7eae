//! Reading a state key out of a JSON value by a dotted path (`user.id`),
//! without building the document: the bytes are scanned once and only the
//! wanted value is kept.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};

use crate::state::event_time::Time;

/// The key in `value` at `path` (a string's characters, or a number's or
/// boolean's JSON text), or why there is none.
pub fn extract<'a>(value: &'a [u8], path: &[String]) -> Result<Cow<'a, [u8]>, String> {
    let name = || path.join(".");
    let mut de = serde_json::Deserializer::from_slice(value);
    match (Path { path, time: None }).deserialize(&mut de) {
        Ok((Some(k), _)) => Ok(k),
        Ok((None, _)) => Err(format!("state key field `{}` is missing", name())),
        Err(e) => Err(format!("cannot read state key field `{}`: {e}", name())),
    }
}

/// The key at `path` and the event time in top-level field `time`, read in
/// one pass, when both are there and readable; `None` otherwise (then
/// [`extract`] and the event-time split, each on its own, say why). The
/// exchange reads both so the split need not parse the value again.
pub fn extract_with_time<'a>(
    value: &'a [u8],
    path: &[String],
    time: &str,
) -> Option<(Cow<'a, [u8]>, i64)> {
    // A key that is the time field itself is left to the two passes.
    if path.first().is_some_and(|f| f == time) {
        return None;
    }
    // The common record: a top-level string key and integer time.
    if let [name] = path
        && let Some((key, time)) = super::scan::key_and_time(value, name, time)
    {
        return Some((Cow::Borrowed(key), time));
    }
    read_with_time(value, path, time)
}

/// [`extract_with_time`] by serde alone (the scan's reference).
pub(super) fn read_with_time<'a>(
    value: &'a [u8],
    path: &[String],
    time: &str,
) -> Option<(Cow<'a, [u8]>, i64)> {
    let mut de = serde_json::Deserializer::from_slice(value);
    match (Path {
        path,
        time: Some(time),
    })
    .deserialize(&mut de)
    {
        Ok((Some(k), Some(t))) => Some((k, t)),
        _ => None,
    }
}

/// Navigates one object level per path segment; with `time`, also reads
/// the event time in that field of this level, as the event-time split
/// does (its last occurrence; the key's first).
struct Path<'p> {
    path: &'p [String],
    time: Option<&'p str>,
}

impl<'de> DeserializeSeed<'de> for Path<'_> {
    type Value = (Option<Cow<'de, [u8]>>, Option<i64>);
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Path<'_> {
    type Value = (Option<Cow<'de, [u8]>>, Option<i64>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (first, rest) = self.path.split_first().expect("a path has a segment");
        let (mut key, mut time) = (None, None);
        while let Some(name) = map.next_key::<Cow<'de, str>>()? {
            if name == first.as_str() && key.is_none() {
                key = if rest.is_empty() {
                    Some(map.next_value_seed(Leaf)?)
                } else {
                    let inner = Path {
                        path: rest,
                        time: None,
                    };
                    map.next_value_seed(inner)?.0
                };
            } else if self.time == Some(&*name) {
                time = Some(map.next_value::<Time>()?.0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok((key, time))
    }
}

/// The key's bytes: strings without their quotes, numbers and booleans as
/// written in JSON.
struct Leaf;

impl<'de> DeserializeSeed<'de> for Leaf {
    type Value = Cow<'de, [u8]>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Leaf {
    type Value = Cow<'de, [u8]>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, number or boolean")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v.as_bytes()))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.as_bytes().to_vec()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string().into_bytes()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string().into_bytes()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Cow::Owned(serde_json::Number::from_f64(v).map_or_else(
            || b"null".to_vec(),
            |n| n.to_string().into_bytes(),
        )))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(if v { b"true" } else { b"false" }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split('.').map(str::to_string).collect()
    }

    #[test]
    fn keys_are_read_by_path() {
        let v = br#"{"a":[1,{"id":2}],"user":{"name":"x","id":"u-\"7"},"n":42,"b":true}"#;
        assert_eq!(&*extract(v, &path("user.id")).unwrap(), b"u-\"7");
        assert_eq!(&*extract(v, &path("user.name")).unwrap(), b"x");
        assert_eq!(&*extract(v, &path("n")).unwrap(), b"42");
        assert_eq!(&*extract(v, &path("b")).unwrap(), b"true");
        let e = extract(v, &path("user.age")).unwrap_err();
        assert_eq!(e, "state key field `user.age` is missing");
        let e = extract(v, &path("user")).unwrap_err();
        assert!(e.starts_with("cannot read state key field `user`"), "{e}");
        let e = extract(b"not json", &path("n")).unwrap_err();
        assert!(e.starts_with("cannot read state key field `n`"), "{e}");
        let e = extract(br#"{"n":null}"#, &path("n")).unwrap_err();
        assert!(e.contains("a string, number or boolean"), "{e}");
    }

    #[test]
    fn key_and_time_in_one_pass_read_as_each_alone() {
        use crate::state::event_time;
        let values: [&[u8]; 9] = [
            br#"{"k":"a","ts":5}"#,
            br#"{"ts":"1970-01-01T00:00:01Z","u":{"id":7},"k":1.5}"#,
            br#"{"k":"a","k":"b","ts":1,"ts":2}"#,
            br#"{"k":"a"}"#,
            br#"{"ts":3}"#,
            br#"{"k":null,"ts":3}"#,
            br#"{"k":"a","ts":true}"#,
            br#"{"k":"a","ts":4"#,
            b"nope",
        ];
        for v in values {
            for p in [path("k"), path("u.id")] {
                let alone = match (extract(v, &p), event_time::extract(v, "ts")) {
                    (Ok(k), Ok(t)) => Some((k.into_owned(), t)),
                    _ => None,
                };
                let both = extract_with_time(v, &p, "ts").map(|(k, t)| (k.into_owned(), t));
                assert_eq!(both, alone, "{} at {p:?}", String::from_utf8_lossy(v));
            }
        }
        assert_eq!(extract_with_time(br#"{"ts":1}"#, &path("ts"), "ts"), None);
    }
}
