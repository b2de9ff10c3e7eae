//! The fast scan against the serde path it stands in for.

use super::key_and_time;
use crate::exchange::key_field::read_with_time;

fn serde(value: &[u8]) -> Option<(Vec<u8>, i64)> {
    read_with_time(value, &["key".to_string()], "ts").map(|(k, t)| (k.into_owned(), t))
}

fn fast(value: &[u8]) -> Option<(Vec<u8>, i64)> {
    key_and_time(value, "key", "ts").map(|(k, t)| (k.to_vec(), t))
}

#[test]
fn the_common_record_is_read_by_the_scan() {
    let cases: [(&str, (&str, i64)); 5] = [
        (
            r#"{"id":1,"key":"user-7","value":"abc","ts":1700000000000}"#,
            ("user-7", 1_700_000_000_000),
        ),
        (" {\n\"ts\" : -5 , \"key\":\"é\" } ", ("é", -5)),
        (
            r#"{"key":"a","nested":{"x":[1,2.5e3,"q\"\n",true,null,{}],"y":[]},"ts":0}"#,
            ("a", 0),
        ),
        (
            r#"{"key":"first","key":"second","ts":1,"ts":2}"#,
            ("first", 2),
        ),
        (r#"{"ts":3,"key":""}"#, ("", 3)),
    ];
    for (text, (key, ts)) in cases {
        let want = Some((key.as_bytes().to_vec(), ts));
        assert_eq!(fast(text.as_bytes()), want, "{text}");
        assert_eq!(serde(text.as_bytes()), want, "{text}");
    }
}

#[test]
fn anything_unusual_is_left_to_serde() {
    for text in [
        r#"{"key":"a\u0041","ts":1}"#,
        r#"{"k\"ey":"a","key":"b","ts":1}"#,
        r#"{"key":"a\\b","ts":1}"#,
        r#"{"key":7,"ts":1}"#,
        r#"{"key":"a","ts":"2024-01-01T00:00:00Z"}"#,
        r#"{"key":"a","ts":1.5}"#,
        r#"{"key":"a","ts":18446744073709551615}"#,
        r#"{"key":"a","ts":1} trailing"#,
        r#"{"key":"a","ts":01}"#,
        r#"{"key":"a","ts":1,}"#,
        r#"{"key":"a","v":"tab	inside","ts":1}"#,
        r#"["key","a"]"#,
        r#"{"key":"a"}"#,
        "{}",
        "",
    ] {
        assert_eq!(fast(text.as_bytes()), None, "{text}");
    }
    let deep = format!(
        r#"{{"key":"a","d":{}{},"ts":1}}"#,
        "[".repeat(70),
        "]".repeat(70)
    );
    assert_eq!(fast(deep.as_bytes()), None);
}

/// Records built from fragments, then mutated byte by byte: whenever the
/// scan answers, serde answers the same.
#[test]
fn when_the_scan_answers_serde_answers_the_same() {
    let fragments: &[&[u8]] = &[
        b"{",
        b"}",
        b"[",
        b"]",
        b",",
        b":",
        b" ",
        b"\n",
        b"\"key\"",
        b"\"ts\"",
        b"\"v\"",
        b"\"a\"",
        b"\"b\\\"c\"",
        b"\"\\u00e9\"",
        b"\"\\n\"",
        b"1",
        b"-0",
        b"12",
        b"1.5",
        b"2e3",
        b"true",
        b"false",
        b"null",
        b"\"\xc3\xa9\"",
        b"\"\xff\"",
        b"-",
        b"01",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let base: &[u8] = br#"{"id":1,"key":"user-1","value":"x","nested":{"a":[1,2]},"ts":5}"#;
    let (mut answered, mut agreed_none) = (0, 0);
    for round in 0..200_000 {
        let mut v: Vec<u8> = if round % 2 == 0 {
            let mut v = base.to_vec();
            for _ in 0..1 + next() % 3 {
                let at = (next() as usize) % (v.len() + 1);
                match next() % 3 {
                    0 if at < v.len() => {
                        v.remove(at);
                    }
                    1 => {
                        let f = fragments[(next() as usize) % fragments.len()];
                        v.splice(at..at, f.iter().copied());
                    }
                    _ if at < v.len() => v[at] = (next() % 128) as u8,
                    _ => {}
                }
            }
            v
        } else {
            let mut v = b"{\"key\":\"k\",".to_vec();
            for _ in 0..next() % 12 {
                v.extend_from_slice(fragments[(next() as usize) % fragments.len()]);
            }
            v.extend_from_slice(b",\"ts\":9}");
            v
        };
        if next() % 5 == 0 {
            v.push(b' ');
        }
        match fast(&v) {
            Some(got) => {
                answered += 1;
                assert_eq!(Some(got), serde(&v), "{}", String::from_utf8_lossy(&v));
            }
            None => agreed_none += usize::from(serde(&v).is_none()),
        }
    }
    // The test means something only if both kinds of input came up.
    assert!(
        answered > 10_000 && agreed_none > 10_000,
        "{answered} {agreed_none}"
    );
}
