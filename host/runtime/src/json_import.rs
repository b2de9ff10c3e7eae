//! `weir:transform/json`: a JSON member of every record of a batch, read
//! here at native speed for guests whose own parsing is slow (a Python
//! filter spends most of its time there). Each record is parsed in full,
//! so a record that is not one valid JSON object is reported as such.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::bindings::{JsonHost, JsonNumbers};
use super::store_data::StoreData;

impl JsonHost for StoreData {
    fn numbers(&mut self, values: Vec<u8>, ends: Vec<u32>, name: String) -> JsonNumbers {
        numbers(&values, &ends, &name)
    }
}

/// The member `name` of each record as a number (NaN when absent or not a
/// number), and the records that are not JSON objects. Ends past the bytes
/// or going backwards make the records they bound not-objects.
pub fn numbers(values: &[u8], ends: &[u32], name: &str) -> JsonNumbers {
    let mut out = JsonNumbers {
        values: Vec::with_capacity(ends.len()),
        not_objects: Vec::new(),
    };
    let mut start = 0usize;
    for (i, &end) in ends.iter().enumerate() {
        let end = end as usize;
        let n = values
            .get(start..end)
            .and_then(|record| number_of(record, name));
        if n.is_none() {
            out.not_objects.push(i as u32);
        }
        out.values.push(n.unwrap_or(f64::NAN));
        start = end.max(start);
    }
    out
}

/// `Some(number or NaN)` for a JSON object, `None` for anything else.
pub fn number_of(record: &[u8], name: &str) -> Option<f64> {
    let mut de = serde_json::Deserializer::from_slice(record);
    let n = Member(name).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(n)
}

/// Walks an object's members (every one, so the whole record is checked)
/// and keeps the first `name` as a number.
struct Member<'n>(&'n str);

impl<'de> DeserializeSeed<'de> for Member<'_> {
    type Value = f64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<f64, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Member<'_> {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<f64, A::Error> {
        let mut found = None;
        while let Some(is_it) = m.next_key_seed(KeyIs(self.0))? {
            if is_it && found.is_none() {
                found = Some(m.next_value::<Number>()?.0);
            } else {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found.unwrap_or(f64::NAN))
    }
}

/// A member name, compared with the one looked for without copying it
/// (unless it has escapes).
struct KeyIs<'n>(&'n str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

/// Any JSON value: its number, or NaN.
struct Number(f64);

impl<'de> de::Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumberVisitor)
    }
}

struct NumberVisitor;

impl<'de> Visitor<'de> for NumberVisitor {
    type Value = Number;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_f64<E>(self, v: f64) -> Result<Number, E> {
        Ok(Number(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Number, E> {
        Ok(Number(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Number, E> {
        Ok(Number(v as f64))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Number, E> {
        Ok(Number(f64::NAN))
    }
    fn visit_str<E>(self, _: &str) -> Result<Number, E> {
        Ok(Number(f64::NAN))
    }
    fn visit_unit<E>(self) -> Result<Number, E> {
        Ok(Number(f64::NAN))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Number, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Number(f64::NAN))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Number, A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Number(f64::NAN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_of_each_shape_and_refusals() {
        let recs: [&[u8]; 9] = [
            br#"{"id":1,"amount":150,"x":[1,{"amount":3}]}"#,
            br#"{"amount":-2.5e1}"#,
            br#"{"note":"\"amount\":999","amount":"12"}"#,
            br#"{"other":1}"#,
            br#"{"amount":true,"amount":7}"#,
            br#"{"am\u006funt":4}"#,
            br#"[1,2]"#,
            br#"{"amount":1} trailing"#,
            br#"{"amount":1,"broken":}"#,
        ];
        let mut values = Vec::new();
        let mut ends = Vec::new();
        for r in recs {
            values.extend_from_slice(r);
            ends.push(values.len() as u32);
        }
        let n = numbers(&values, &ends, "amount");
        assert_eq!(&n.values[..2], &[150.0, -25.0]);
        assert!(n.values[2].is_nan(), "a string is not a number");
        assert!(n.values[3].is_nan(), "absent");
        assert!(n.values[4].is_nan(), "the first of a repeated name counts");
        assert_eq!(n.values[5], 4.0, "an escaped name is the same name");
        assert_eq!(n.not_objects, vec![6, 7, 8]);
        // Ends that do not fit the bytes refuse their records, nothing more.
        let bad = numbers(b"{}{}", &[2, 99, 1], "a");
        assert_eq!(bad.not_objects, vec![1, 2]);
    }
}
