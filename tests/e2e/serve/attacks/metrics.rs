//! Attack 8: guest metric names that would inject exposition lines
//! (quotes, newlines, braces) into another tenant's and the admin's
//! `/metrics`.

use super::{Victim, append_values, put};
use crate::serve::Server;

#[test]
fn guest_metric_names_cannot_forge_series() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let alice = Victim::start(&s, &data);
    let mallory = s.tenant("mallory");
    let id = s.upload(&mallory, "misbehave");
    let forged = "metric:x\",tenant=\"alice\"} 1\nweir_forged_total{tenant=\"alice\",pipeline=\"copy\"} 99\n#";
    append_values(
        &data.join("tenants/mallory/log"),
        &[forged, "metric:fine_name", "metric:bad name", "metric:{}"],
    );
    let spec = format!(
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{id}\"\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n"
    );
    let (st, v) = put(&s, &mallory, "forge", &spec);
    assert_eq!(st, 201, "{v}");
    let v = s.wait_for(&mallory, "forge", |v| {
        v["progress"]["transformMetrics"]["counters"]["fine_name"].is_u64()
    });
    let tm = &v["progress"]["transformMetrics"];
    assert_eq!(tm["counters"]["fine_name"], 1, "{v}");
    assert_eq!(tm["dropped"], 3, "the three refused names are counted: {v}");
    let text = |token: &str| s.metrics(token);
    for (who, body) in [("alice", text(&alice.token)), ("admin", text(&s.admin))] {
        assert!(
            !body.contains("weir_forged"),
            "{who} sees a forged series:\n{body}"
        );
        assert!(
            !body.contains("pipeline=\"forge\"") || who == "admin",
            "{who}:\n{body}"
        );
        for line in body.lines().filter(|l| !l.starts_with('#')) {
            assert!(
                line.starts_with("weir_")
                    && line.rsplit(' ').next().unwrap().parse::<f64>().is_ok(),
                "{who}: a malformed line: {line}"
            );
        }
    }
    let mine = text(&mallory);
    assert!(mine.contains("name=\"fine_name\""), "{mine}");
    assert!(!mine.contains("tenant=\"alice\""), "{mine}");
}
