//! Attack 3 (and the other numbers a pipeline file sets): one file that
//! exhausts the host, e.g. a rate source with four billion partitions.

use super::{Victim, assert_refused, put, rss_kib};
use crate::serve::Server;

#[test]
fn hostile_numbers_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let mut alice = Victim::start(&s, &data);
    let mallory = s.tenant("mallory");
    let id = s.upload(&mallory, "misbehave");
    let rss_before = rss_kib(s.pid());
    let rate = |extra: &str| {
        let rows = if extra.contains("rows-per-second") {
            ""
        } else {
            "rows-per-second = 10\n"
        };
        format!(
            "[[source]]\ntype = \"rate\"\n{rows}{extra}\n[transform]\ncomponent = \"{id}\"\n[sink.default]\ntype = \"console\"\n"
        )
    };
    let guest = |limits: &str| {
        format!(
            "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{id}\"\n[transform.limits]\n{limits}\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n"
        )
    };
    let cases = [
        (
            rate("partitions = 4294967295"),
            "partitions = 4294967295 is above",
        ),
        (
            rate("rows-per-second = 9223372036854775807"),
            "rows-per-second",
        ),
        (
            rate("max-records-per-trigger = 9223372036854775807"),
            "max-records-per-trigger",
        ),
        (rate("[trigger]\nidle-poll = \"1ns\""), "trigger.idle-poll"),
        (
            rate("[trigger]\ntype = \"processing-time\"\ninterval = \"100000d\""),
            "trigger.interval",
        ),
        (
            guest("call-timeout = \"100000d\""),
            "transform.limits.call-timeout",
        ),
        (guest("memory = \"1000GiB\""), "transform.limits.memory"),
        (guest("state = \"100000GiB\""), "transform.limits.state"),
        (
            guest("max-outputs-per-record = 9223372036854775807"),
            "max-outputs-per-record",
        ),
        (guest("max-record-size = \"1000GiB\""), "max-record-size"),
        (guest("fuel = 9223372036854775807"), "transform.limits.fuel"),
        (
            guest("").replace("topic = \"out\"", "topic = \"out\"\npartitions = 100000"),
            "sink.default.partitions",
        ),
        (
            format!(
                "mode = \"continuous\"\ncheckpoint-interval = \"1ns\"\n{}",
                guest("")
            ),
            "checkpoint-interval",
        ),
    ];
    for (text, needle) in &cases {
        assert_refused(put(&s, &mallory, "hog", text), 400, needle, &data);
    }
    // Negative and non-numbers are refused by the parser, with the key.
    assert_refused(
        put(&s, &mallory, "hog", &rate("partitions = -1")),
        400,
        "-1",
        &data,
    );
    assert_eq!(
        s.call("GET", "/v1/pipelines", Some(&mallory), None).1,
        serde_json::json!([])
    );
    // The server did not grow for it, and alice's pipeline goes on.
    let grown = rss_kib(s.pid()).saturating_sub(rss_before);
    assert!(grown < 64 << 10, "the server grew by {grown} KiB");
    alice.send(100);
    alice.assert_flowing();
}
