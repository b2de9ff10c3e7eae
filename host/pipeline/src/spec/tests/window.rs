//! `[window]` as written, and every way it can be wrong.

use weir_engine::window::Aggregation;

use super::parse;

fn pipeline(window: &str, rest: &str) -> String {
    format!(
        r#"
checkpoint = "ckpt"
[[source]]
type = "log"
path = "data"
topic = "events"
[window]
{window}
{rest}
[sink.default]
type = "files"
path = "out"
"#
    )
}

const KEYED: &str = "[state]\nkey-field = \"user.id\"\n[event-time]\nfield = \"ts\"";

#[test]
fn a_window_is_read_into_the_engines_spec() {
    let p = parse(&pipeline(
        "size = \"1m\"\nslide = \"10s\"\naggregate = \"sum\"\nfield = \"order.total\"\non-error = \"fail\"",
        KEYED,
    ))
    .unwrap();
    let w = p.window.unwrap();
    assert_eq!((w.spec.size_ms, w.spec.slide_ms), (60_000, 10_000));
    assert_eq!(
        w.spec.aggregate,
        Aggregation::Sum(vec!["order".into(), "total".into()])
    );
    assert_eq!(w.on_error, super::OnError::Fail);
    let p = parse(&pipeline("size = \"10s\"", KEYED)).unwrap();
    let w = p.window.unwrap();
    assert_eq!(
        (w.spec.slide_ms, w.spec.aggregate, w.on_error),
        (10_000, Aggregation::Count, super::OnError::Skip)
    );
}

#[test]
fn wrong_windows_are_refused_in_one_line_naming_the_key() {
    let cases = [
        (
            "size = \"0s\"",
            KEYED,
            "window.size: `0s` is shorter than a millisecond",
        ),
        ("size = \"ten\"", KEYED, "window.size:"),
        (
            "size = \"10s\"\nslide = \"20s\"",
            KEYED,
            "longer than window.size",
        ),
        (
            "size = \"1h\"\nslide = \"1s\"",
            KEYED,
            "in 3600 windows; at most 100",
        ),
        (
            "size = \"10s\"\naggregate = \"median\"",
            KEYED,
            "window.aggregate: `median`",
        ),
        (
            "size = \"10s\"\naggregate = \"sum\"",
            KEYED,
            "needs window.field",
        ),
        (
            "size = \"10s\"\nfield = \"x\"",
            KEYED,
            "window.field applies to sum",
        ),
        (
            "size = \"10s\"\naggregate = \"max\"\nfield = \"a..b\"",
            KEYED,
            "not a dotted field path",
        ),
        (
            "size = \"10s\"\non-error = \"ignore\"",
            KEYED,
            "window.on-error: `ignore`",
        ),
        (
            "size = \"10s\"\nsizes = \"1s\"",
            KEYED,
            "unknown field `sizes`",
        ),
        (
            "size = \"10s\"",
            "[event-time]\nfield = \"ts\"",
            "say which in [state]",
        ),
        (
            "size = \"10s\"",
            "[state]\nkey = \"record-key\"",
            "needs an [event-time] section",
        ),
        (
            "size = \"10s\"\non-error = \"dead-letter\"",
            KEYED,
            "window.on-error = \"dead-letter\" needs a [sink.dead-letter]",
        ),
        (
            "size = \"10s\"",
            "[transform]\ncomponent = \"up.wasm\"\n[state]\nkey = \"record-key\"\n[event-time]\nfield = \"ts\"",
            "either a [transform] component or a [window] aggregation",
        ),
    ];
    for (window, rest, expected) in cases {
        let err = parse(&pipeline(window, rest)).unwrap_err();
        assert!(err.contains(expected), "{window} / {rest}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
    // Complete mode emits every window each batch: no watermark needed.
    let complete = format!(
        "output-mode = \"complete\"\n{}",
        pipeline("size = \"10s\"", "[state]\nkey = \"record-key\"")
    );
    parse(&complete).unwrap();
}
