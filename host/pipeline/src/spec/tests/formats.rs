//! `value-format`, `value-schema` and `[registry]`, and every way they can
//! be wrong.

use weir_formats::{Format, SubjectStrategy};

use super::parse;
use crate::spec::RegistrySpec;

fn pipeline(source: &str, sink: &str, rest: &str) -> String {
    format!(
        r#"
checkpoint = "ckpt"
[[source]]
type = "log"
path = "data"
topic = "in"
{source}
[sink.default]
type = "log"
path = "data"
topic = "out"
{sink}
{rest}
"#
    )
}

const FILES: &str = "[registry.schemas]\n1 = \"v1.avsc\"\n";

#[test]
fn formats_and_schema_files_are_read() {
    let p = parse(&pipeline(
        "value-format = \"avro\"\nvalue-schema = \"v1.avsc\"",
        "value-format = \"avro\"\nvalue-schema = \"v1.avsc\"\nsubject-name-strategy = \"topic-record-name\"",
        FILES,
    ))
    .unwrap();
    assert_eq!(p.source_formats[0].format, Format::Avro);
    assert!(
        p.source_formats[0]
            .schema
            .as_ref()
            .unwrap()
            .ends_with("v1.avsc")
    );
    assert_eq!(
        p.sink_formats[0].subject_strategy,
        SubjectStrategy::TopicRecordName
    );
    match p.registry.unwrap() {
        RegistrySpec::Files(f) => assert!(f[&1].ends_with("v1.avsc")),
        other => panic!("{other:?}"),
    }
    let p = parse(&pipeline(
        "value-format = \"avro\"",
        "",
        "[registry]\nurl = \"http://r:8081\"\nusername = \"u\"\npassword = \"p\"\ntimeout = \"2s\"",
    ))
    .unwrap();
    assert!(matches!(
        p.registry,
        Some(RegistrySpec::Url {
            auto_register: true,
            ..
        })
    ));
}

#[test]
fn mistakes_are_refused_with_what_to_do() {
    let err =
        |source: &str, sink: &str, rest: &str| parse(&pipeline(source, sink, rest)).unwrap_err();
    let avro = "value-format = \"avro\"";
    for (source, sink, rest, wanted) in [
        (avro, "", "", "needs a [registry]"),
        ("", "", FILES, "[registry] applies when"),
        ("value-format = \"xml\"", "", "", "format `xml`"),
        ("value-format = \"protobuf\"", "", "", "needs a [registry]"),
        (
            "value-format = \"json-schema\"\nvalue-schema = \"o.json\"",
            "",
            FILES,
            "and to sinks of a schema'd format",
        ),
        (
            "",
            "value-format = \"json-schema\"",
            FILES,
            "needs value-schema",
        ),
        ("", avro, FILES, "needs value-schema"),
        (
            "value-schema = \"a.avsc\"",
            "",
            "",
            "applies to value-format = \"avro\"",
        ),
        (
            "subject-name-strategy = \"topic-name\"",
            "",
            "",
            "applies to sinks",
        ),
        (avro, "", "[registry]\nurl = \"ftp://x\"", "not an http"),
        (
            avro,
            "",
            "[registry]\nurl = \"http://x\"\nusername = \"u\"",
            "both username and password",
        ),
        (
            avro,
            "",
            "[registry]\nurl = \"http://x\"\ntimeout = \"1h\"",
            "at most 300s",
        ),
        (
            avro,
            "",
            "[registry]\nurl = \"http://x\"\n[registry.schemas]\n1 = \"a\"",
            "not both",
        ),
        (
            avro,
            "",
            "[registry.schemas]\nfirst = \"a\"",
            "not a schema id",
        ),
        (
            avro,
            "",
            &format!("{FILES}[state]\nkey-field = \"id\"\n"),
            "key it by the record key",
        ),
        (
            avro,
            "",
            &format!("{FILES}[event-time]\nfield = \"ts\"\n"),
            "use the record timestamp",
        ),
    ] {
        let e = err(source, sink, rest);
        assert!(e.contains(wanted), "{source} / {sink} / {rest}: {e}");
    }
    // A files source has its own `format`; value-format is for log and kafka.
    let files = "checkpoint = \"c\"\n[[source]]\ntype = \"files\"\npath = \"in\"\nvalue-format = \"avro\"\n[sink.default]\ntype = \"console\"\n[registry.schemas]\n1 = \"a\"\n";
    assert!(
        parse(files)
            .unwrap_err()
            .contains("applies to log and kafka sources")
    );
}
