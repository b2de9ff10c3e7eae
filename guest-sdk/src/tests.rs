//! The SDK's own behaviour, natively, through the real batch encoding.

use crate::testing::{self, run, run_values};
use crate::{Config, Output, Record, RecordError, Transform};

struct Upper;
impl Transform for Upper {
    fn init(_: &Config) -> Result<Self, String> {
        Ok(Upper)
    }
    fn process(&mut self, r: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
        out.emit_with(|b| b.extend(r.value().iter().map(u8::to_ascii_uppercase)));
        Ok(())
    }
}

/// Emits each record twice, refuses "bad" after emitting once, routes "x".
struct Tricky;
impl Transform for Tricky {
    fn init(c: &Config) -> Result<Self, String> {
        c.only(&[])?;
        Ok(Tricky)
    }
    fn process(&mut self, r: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
        match r.value() {
            b"bad" => {
                out.emit("partial");
                Err(RecordError::bad("no"))
            }
            b"x" => {
                out.build()
                    .key(Some("k"))
                    .header("h", "v")
                    .to("side")
                    .emit("X");
                Ok(())
            }
            b"boom" => Err(RecordError::broken("broken")),
            v => {
                out.emit(v);
                out.emit(v);
                Ok(())
            }
        }
    }
}

#[test]
fn map_keeps_one_to_one_and_inherits_key_and_timestamp() {
    let mut t = Upper;
    let recs = [
        Record::new(b"ab").with_key(Some(b"k1")).with_timestamp(7),
        Record::new(b"c").with_timestamp(9),
    ];
    let run = run(&mut t, &recs).unwrap();
    assert_eq!(run.values(), vec!["AB", "C"]);
    assert_eq!(run.emitted[0].key.as_deref(), Some(&b"k1"[..]));
    assert_eq!(run.emitted[1].key, None);
    assert_eq!(run.emitted[1].timestamp, 9);
}

#[test]
fn bad_record_rolls_back_its_partial_output() {
    let mut t = testing::init::<Tricky>(&[]).unwrap();
    let run = run_values(&mut t, &["a", "bad", "b"]).unwrap();
    assert_eq!(run.values(), vec!["a", "a", "b", "b"]);
    assert_eq!(run.rejected, vec![(1, "no".to_string())]);
    let origins: Vec<u32> = run.emitted.iter().map(|e| e.origin).collect();
    assert_eq!(origins, vec![0, 0, 2, 2]);
}

#[test]
fn named_outputs_keys_and_headers_are_encoded() {
    let mut t = Tricky;
    let run = run_values(&mut t, &["x", "a"]).unwrap();
    let x = &run.emitted[0];
    assert_eq!(x.output.as_deref(), Some("side"));
    assert_eq!(x.key.as_deref(), Some(&b"k"[..]));
    assert_eq!(x.headers, vec![("h".to_string(), b"v".to_vec())]);
    assert_eq!(run.emitted[1].output, None);
    assert_eq!(run.emitted[1].key, None);
}

#[test]
fn broken_error_names_the_record() {
    let mut t = Tricky;
    let err = run_values(&mut t, &["a", "boom"]).unwrap_err();
    assert!(err.contains("record 1") && err.contains("broken"), "{err}");
}

#[test]
fn unknown_config_key_is_refused_by_name() {
    let err = testing::init::<Tricky>(&[("colour", "red")]).err().unwrap();
    assert!(err.contains("`colour`"), "{err}");
}

#[test]
fn metrics_are_recorded_off_wasm() {
    crate::host::counter_add("seen", 2);
    crate::host::counter_add("seen", 3);
    crate::host::gauge_set("lag", 1.5);
    assert_eq!(testing::counter("seen"), 5);
    assert_eq!(testing::gauge("lag"), Some(1.5));
}

#[test]
fn config_durations_refuse_overflow_by_key() {
    let c = crate::Config::new(vec![
        ("gap".into(), "5m".into()),
        ("ttl".into(), "99999999999999999d".into()),
    ]);
    let d = std::time::Duration::from_secs(1);
    assert_eq!(
        c.duration("gap", d).unwrap(),
        std::time::Duration::from_secs(300)
    );
    let err = c.duration("ttl", d).unwrap_err();
    assert_eq!(err, "config `ttl`: `99999999999999999d` is too long");
}

/// Forwards everything; turns "delete" into a tombstone with a new header.
struct Passthrough;
impl Transform for Passthrough {
    fn init(_: &Config) -> Result<Self, String> {
        Ok(Passthrough)
    }
    fn process(&mut self, r: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
        if r.value() == b"delete" {
            out.build().header("why", "asked").emit_tombstone();
        } else {
            out.forward();
        }
        Ok(())
    }
}

#[test]
fn tombstones_and_typed_headers_cross_the_encoding_both_ways() {
    use crate::wit::Header;
    let h = [Header {
        name: "trace".into(),
        value: b"7".to_vec(),
    }];
    let input = [
        Record::new(b"keep").with_headers(&h),
        Record::new(b"").with_key(Some(b"k")).without_value(),
        Record::new(b"delete").with_headers(&h),
    ];
    assert!(!input[1].has_value() && input[1].value_opt().is_none());
    let got = run(&mut Passthrough, &input).unwrap().emitted;
    assert!(got[0].has_value && got[0].value == b"keep");
    assert_eq!(got[0].headers, [("trace".to_string(), b"7".to_vec())]);
    assert!(!got[1].has_value, "a forwarded tombstone stays one");
    assert_eq!(got[1].key.as_deref(), Some(&b"k"[..]));
    assert!(got[1].headers.is_empty());
    assert!(!got[2].has_value);
    assert_eq!(got[2].headers, [("why".to_string(), b"asked".to_vec())]);
}

#[test]
fn a_map_passes_tombstones_through_without_calling_the_function() {
    let upper = |r: &Record<'_>| -> Result<Vec<u8>, RecordError> {
        assert!(r.has_value(), "called for a tombstone");
        Ok(r.value().to_ascii_uppercase())
    };
    let input = [
        Record::new(b"a"),
        Record::new(b"").with_key(Some(b"k")).without_value(),
    ];
    let got = testing::run_fn(&input, |r, o| crate::rt::apply_map(&upper, r, o))
        .unwrap()
        .emitted;
    assert_eq!(
        (got[0].value.as_slice(), got[0].has_value),
        (&b"A"[..], true)
    );
    assert!(!got[1].has_value);
    assert_eq!(got[1].key.as_deref(), Some(&b"k"[..]));
}
