//! Reading the text exposition back, to show a tenant only its own series:
//! a sample belongs to the tenant whose name is its `tenant` label's value,
//! read by the exposition format's own rules (quoted values, `\\`, `\"` and
//! `\n` escapes), never by matching text in the line.

/// The value of label `name` of the sample line `line`, if it has one.
pub fn label_value(line: &str, name: &str) -> Option<String> {
    let open = line.find('{')?;
    // The metric name comes first and cannot hold `{`, quotes or spaces.
    if line[..open].contains([' ', '"']) {
        return None;
    }
    let mut chars = line[open + 1..].chars().peekable();
    loop {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        let key = key.trim_start_matches(',').trim();
        if chars.next() != Some('"') {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                '"' => break,
                c => value.push(c),
            }
        }
        if key == name {
            return Some(value);
        }
        match chars.next()? {
            ',' => {
                if chars.peek() == Some(&'}') {
                    return None;
                }
            }
            '}' => return None,
            _ => return None,
        }
    }
}

/// The lines of `text` a tenant may see: comments (`# HELP`, `# TYPE`,
/// `# EOF`) and the samples whose `tenant` label is exactly `tenant`.
pub fn for_tenant(text: &str, tenant: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.starts_with('#') || label_value(line, "tenant").as_deref() == Some(tenant) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_read_by_the_format_not_by_substring() {
        let line = r#"weir_guest_counter_total{tenant="bob",pipeline="p",name="x"} 1"#;
        assert_eq!(label_value(line, "tenant").as_deref(), Some("bob"));
        assert_eq!(label_value(line, "name").as_deref(), Some("x"));
        // A value that holds another label's text (escaped, as it would be
        // if a name ever carried quotes) does not make it that label.
        let forged =
            r#"weir_guest_counter_total{tenant="eve",pipeline="p",name="tenant=\"bob\""} 1"#;
        assert_eq!(label_value(forged, "tenant").as_deref(), Some("eve"));
        assert_eq!(
            label_value(forged, "name").as_deref(),
            Some(r#"tenant="bob""#)
        );
        let text = format!("# TYPE x counter\n{line}\n{forged}\nno_labels 3\n");
        assert_eq!(
            for_tenant(&text, "bob"),
            format!("# TYPE x counter\n{line}\n")
        );
        assert_eq!(label_value("bad{tenant=bob} 1", "tenant"), None);
    }
}
