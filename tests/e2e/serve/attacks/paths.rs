//! Attack 1: a topic name (or any path) that leads out of the tenant's
//! root, to read, write or tamper with another tenant's data or the host's.

use super::{Victim, assert_refused, put};
use crate::serve::Server;

#[test]
fn names_and_paths_that_leave_the_tenant_root_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let mut alice = Victim::start(&s, &data);
    let mallory = s.tenant("mallory");
    let id = s.upload(&mallory, "uppercase");
    let outside = dir.path().join("outside");
    let base = format!(
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{id}\"\non-error = \"dead-letter\"\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n[sink.dead-letter]\ntype = \"log\"\npath = \"log\"\ntopic = \"dead\"\n"
    );
    let escapes = [
        ("topic = \"in\"", "topic = \"../../alice/log/out\""),
        ("topic = \"out\"", "topic = \"../../alice/log/in\""),
        ("topic = \"dead\"", "topic = \"../../alice/log/out\""),
        (
            "topic = \"out\"",
            &format!("topic = \"{}\"", outside.display()),
        ),
        ("topic = \"in\"", "topic = \"..\""),
        ("topic = \"in\"", "topic = \"a\\u0000b\""),
        ("topic = \"in\"", "topic = \"caf\u{e9}\""),
    ];
    for (from, to) in escapes {
        let text = base.replace(from, to);
        assert_refused(put(&s, &mallory, "steal", &text), 400, "topic name", &data);
    }
    let paths = [
        (
            "path = \"log\"\ntopic = \"out\"",
            "path = \"../alice/log\"\ntopic = \"out\"",
        ),
        (
            "path = \"log\"\ntopic = \"in\"",
            &format!("path = \"{}\"\ntopic = \"in\"", outside.display()),
        ),
    ];
    for (from, to) in paths {
        let text = base.replace(from, to);
        assert_refused(
            put(&s, &mallory, "steal", &text),
            400,
            "outside the tenant's data",
            &data,
        );
    }
    for checkpoint in ["../alice/checkpoints/copy", "/tmp/weir-attack"] {
        let text = format!("checkpoint = \"{checkpoint}\"\n{base}");
        assert_refused(
            put(&s, &mallory, "steal", &text),
            400,
            "outside the tenant's data",
            &data,
        );
    }
    let files = base.replace(
        "[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"",
        "[sink.default]\ntype = \"files\"\npath = \"../alice/log/out\"",
    );
    assert_refused(
        put(&s, &mallory, "steal", &files),
        400,
        "outside the tenant's data",
        &data,
    );
    // Schema files are places too, and a registry URL would make the
    // service send requests where mallory says.
    let avro = base.replace(
        "topic = \"in\"\n",
        "topic = \"in\"\nvalue-format = \"avro\"\nvalue-schema = \"SCHEMA\"\n",
    );
    for (schema, registry) in [
        (
            "../alice/log/in/x.avsc",
            "[registry.schemas]\n1 = \"own.avsc\"\n",
        ),
        ("own.avsc", "[registry.schemas]\n1 = \"/etc/passwd\"\n"),
        (
            "own.avsc",
            "[registry.schemas]\n1 = \"../alice/checkpoints/x\"\n",
        ),
    ] {
        let text = format!("{}{registry}", avro.replace("SCHEMA", schema));
        assert_refused(
            put(&s, &mallory, "steal", &text),
            400,
            "outside the tenant's data",
            &data,
        );
    }
    let text = format!(
        "{}[registry]\nurl = \"http://127.0.0.1:8081/\"\n",
        avro.replace("SCHEMA", "own.avsc")
    );
    assert_refused(
        put(&s, &mallory, "steal", &text),
        400,
        "registry.url",
        &data,
    );
    // Nothing of alice's changed, nothing was made outside, and her
    // pipeline goes on.
    assert!(!outside.exists());
    assert!(!std::path::Path::new("/tmp/weir-attack").exists());
    alice.assert_input_untouched();
    alice.send(100);
    alice.assert_flowing();
    assert_eq!(
        s.call("GET", "/v1/pipelines", Some(&mallory), None).1,
        serde_json::json!([])
    );
}

#[test]
fn the_embedded_log_refuses_topic_names_that_are_not_plain_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("log");
    std::fs::create_dir(&root).unwrap();
    for bad in ["../escape", "/abs", "a/b", ".."] {
        let out = crate::testkit::weir()
            .args(["log", "create"])
            .arg(&root)
            .arg(bad)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("topic name"), "{bad}: {err}");
    }
    assert!(!dir.path().join("escape").exists());
    assert!(!std::path::Path::new("/abs").exists());
}
