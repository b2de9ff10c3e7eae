//! `[[source]]` tables: each source's connector, and the keys that say how
//! a source feeds a transform reading several (a join): its name, the
//! guest's way to tell inputs apart, and its own state key and event-time
//! fields when they are not the pipeline's.

use std::collections::BTreeMap;
use std::path::Path;

use super::SourceSpec;
use super::raw::RawSourceEntry;
use weir_engine::exchange::StateKey;

/// Every source of a pipeline, validated.
pub(super) struct Sources {
    pub specs: Vec<SourceSpec>,
    /// By index; `source-<index>` where the pipeline gives no name.
    pub names: Vec<String>,
    /// Sources with their own state key, by index.
    pub keys: BTreeMap<usize, StateKey>,
    /// Sources with their own event-time field, by index.
    pub event_time_fields: BTreeMap<usize, String>,
    /// Each source's value format, by index.
    pub formats: Vec<super::ValueFormat>,
}

pub(super) fn sources(raw: Vec<RawSourceEntry>, base: &Path) -> Result<Sources, String> {
    if raw.is_empty() {
        return Err("at least one [[source]] is required".into());
    }
    let mut out = Sources {
        specs: Vec::new(),
        names: Vec::new(),
        keys: BTreeMap::new(),
        event_time_fields: BTreeMap::new(),
        formats: Vec::new(),
    };
    for (i, s) in raw.into_iter().enumerate() {
        let name = match s.name {
            Some(n) => {
                check_name(&n).map_err(|e| format!("source {i}: name `{n}` {e}"))?;
                n
            }
            None => format!("source-{i}"),
        };
        if let Some(j) = out.names.iter().position(|n| *n == name) {
            return Err(format!(
                "sources {j} and {i} are both named `{name}`: a transform tells its inputs apart by name"
            ));
        }
        if let Some(f) = s.key_field {
            out.keys.insert(
                i,
                field_key(&f).map_err(|e| format!("source `{name}`: key-field {e}"))?,
            );
        }
        if let Some(f) = s.event_time_field {
            if f.is_empty() {
                return Err(format!(
                    "source `{name}`: event-time-field must not be empty (leave it out to use [event-time] field)"
                ));
            }
            out.event_time_fields.insert(i, f);
        }
        let plain = matches!(
            s.kind,
            super::raw::RawSource::Log { .. } | super::raw::RawSource::Kafka(_)
        );
        out.formats.push(super::formats::value_format(
            &format!("source `{name}`"),
            s.format,
            base,
            false,
            plain,
        )?);
        out.specs.push(super::connectors::source(i, s.kind, base)?);
        out.names.push(name);
    }
    Ok(out)
}

/// A dotted JSON path (`user.id`) as a state key.
pub(super) fn field_key(f: &str) -> Result<StateKey, String> {
    let path: Vec<String> = f.split('.').map(str::to_string).collect();
    if path.iter().any(String::is_empty) {
        return Err(format!(
            "`{f}` is not a field path (names joined by dots, e.g. \"user.id\")"
        ));
    }
    Ok(StateKey::Field(path))
}

/// Names are shown to guests and in logs: letters, digits, `-`, `_`, `.`.
fn check_name(n: &str) -> Result<(), &'static str> {
    if n.is_empty() || n.len() > 64 {
        return Err("must be 1 to 64 characters long");
    }
    if !n
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err("may hold only letters, digits, `-`, `_` and `.`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::spec::Pipeline;
    use weir_engine::exchange::StateKey;

    fn parse(extra: &str, sources: &str) -> Result<Pipeline, String> {
        let text =
            format!("checkpoint = \"c\"\n{extra}\n{sources}\n[sink.default]\ntype = \"console\"\n");
        Pipeline::parse(&text, "p.toml", std::path::Path::new("/b")).map_err(|e| e.to_string())
    }

    const TWO: &str = r#"
[[source]]
name = "orders"
type = "files"
path = "o"
key-field = "order_id"
[[source]]
type = "files"
path = "p"
key-field = "pay.order"
event-time-field = "pay_ts"
"#;

    #[test]
    fn sources_carry_names_keys_and_event_time_fields() {
        let p = parse("[event-time]\nfield = \"ts\"\n", TWO).unwrap();
        assert_eq!(p.state.source_names, ["orders", "source-1"]);
        let k = p.state_key.unwrap();
        assert_eq!(k.key_of(0), &StateKey::Field(vec!["order_id".into()]));
        assert_eq!(
            k.key_of(1),
            &StateKey::Field(vec!["pay".into(), "order".into()])
        );
        let et = p.state.event_time.unwrap();
        assert_eq!(
            (et.field_of(0), et.field_of(1)),
            (Some("ts"), Some("pay_ts"))
        );
    }

    #[test]
    fn source_keys_and_names_are_checked() {
        let e = parse("", TWO).unwrap_err();
        assert!(
            e.contains("source `source-1`: event-time-field needs an [event-time] section"),
            "{e}"
        );
        let one_keyed = TWO.replace("key-field = \"order_id\"\n", "");
        let e = parse("[event-time]\n", &one_keyed).unwrap_err();
        assert!(e.contains("source `orders` has no state key"), "{e}");
        // The [state] key covers the sources without their own.
        let p = parse("[event-time]\n[state]\nkey = \"record-key\"\n", &one_keyed).unwrap();
        let k = p.state_key.unwrap();
        assert_eq!(k.key_of(0), &StateKey::RecordKey);
        let dup = TWO.replace(
            "type = \"files\"\npath = \"p\"",
            "name = \"orders\"\ntype = \"files\"\npath = \"p\"",
        );
        let e = parse("[event-time]\n", &dup).unwrap_err();
        assert!(e.contains("sources 0 and 1 are both named `orders`"), "{e}");
        let e = parse("[event-time]\n", &TWO.replace("\"orders\"", "\"a b\"")).unwrap_err();
        assert!(e.contains("name `a b` may hold only"), "{e}");
        let e = parse(
            "[event-time]\n",
            &TWO.replace("\"pay.order\"", "\"pay..order\""),
        )
        .unwrap_err();
        assert!(
            e.contains("key-field `pay..order` is not a field path"),
            "{e}"
        );
        let e = parse(
            "[event-time]\n",
            &TWO.replace("name = \"orders\"", "name = 3"),
        )
        .unwrap_err();
        assert!(
            e.contains("source name: expected a string, found integer"),
            "{e}"
        );
        // Unknown keys are still refused.
        let e = parse(
            "[event-time]\n",
            &TWO.replace("path = \"o\"", "path = \"o\"\npth = 1"),
        )
        .unwrap_err();
        assert!(e.contains("unknown field `pth`"), "{e}");
    }
}
