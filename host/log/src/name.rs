//! Topic names: plain names by Kafka's rules, since a name is a directory.

use super::LogError;

/// The longest topic name, in bytes (Kafka's limit).
pub const MAX_TOPIC_NAME: usize = 249;

/// Check that `name` is a plain topic name by Kafka's rules: 1 to 249
/// ASCII letters, digits, `.`, `_` and `-`, and not `.` or `..`. A topic
/// name is joined onto the log's root directory, so anything else (`/`,
/// `\`, `..`, NUL, an absolute path) could name a directory outside it;
/// every command goes through here, not only the service.
pub fn check_topic_name(name: &str) -> Result<(), LogError> {
    let bad = |why| {
        Err(LogError::BadName {
            name: name.chars().take(MAX_TOPIC_NAME + 1).collect(),
            why,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_TOPIC_NAME {
        return bad("it is longer than 249 bytes");
    }
    if name == "." || name == ".." {
        return bad("`.` and `..` are not topic names");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return bad("use only ASCII letters, digits, `.`, `_` and `-`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_pass() {
        for good in ["events", "events-enriched", "a.b_c-D9", &"x".repeat(249)] {
            check_topic_name(good).unwrap();
        }
        for bad in [
            "",
            ".",
            "..",
            "../alice/data/out",
            "/etc/passwd",
            "a/b",
            "a\\b",
            "nul\0byte",
            "caf\u{e9}",
            "space name",
            &"x".repeat(250),
        ] {
            let err = check_topic_name(bad).unwrap_err().to_string();
            assert!(err.starts_with("topic name `"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn opening_or_creating_a_bad_name_touches_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        assert!(super::super::Topic::create(&root, "../outside", 1).is_err());
        assert!(super::super::Topic::open(&root, "../outside").is_err());
        assert!(!dir.path().join("outside").exists());
    }
}
