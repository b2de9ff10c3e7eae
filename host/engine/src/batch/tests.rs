use super::*;

#[test]
fn optional_columns_materialise_on_first_use() {
    let mut b = RecordBatch::new(1);
    b.push(None, b"a", 1, 10);
    assert!(b.columns.slices().key_ends.is_empty() && !b.columns.has_headers());
    b.push_with_headers(Some(b"k"), b"bc", &[("h", b"v")], 2, 11);
    b.push(None, b"", 3, 12);
    b.validate().unwrap();
    assert_eq!(b.get(0).key, None);
    assert_eq!(b.get(1).key, Some(&b"k"[..]));
    assert_eq!(
        b.get(1).headers().collect::<Vec<_>>(),
        vec![("h", &b"v"[..])]
    );
    assert_eq!(b.get(2).key, None);
    assert_eq!(b.get(2).headers().count(), 0);
    assert_eq!(b.get(1).value, b"bc");
    assert!(
        b.columns.slices().has_value.is_empty(),
        "no tombstone yet, no column"
    );
    b.push_record(&RecordRef::new(Some(b"k"), None, &[], 4, 13));
    b.validate().unwrap();
    assert_eq!(b.columns.slices().has_value, vec![true, true, true, false]);
    assert_eq!(
        (b.get(2).value_opt(), b.get(3).value_opt()),
        (Some(&b""[..]), None)
    );
    // A copy keeps the absence.
    let mut c = RecordBatch::new(1);
    c.push_record(&b.get(3));
    assert_eq!(c.get(0).value_opt(), None);
    b.columns.parts_mut().has_value.pop();
    assert!(b.validate().is_err(), "has-value must cover every record");
}

#[test]
fn validate_names_the_broken_column() {
    let mut b = RecordBatch::new(0);
    b.push(None, b"abc", 0, 0);
    b.columns.parts_mut().value_ends[0] = 9;
    assert_eq!(
        b.validate().unwrap_err().to_string(),
        "value-ends: last end 9 is past the data length 3"
    );
    let mut b = RecordBatch::new(0);
    b.push(None, b"abc", 0, 0);
    b.offsets.clear();
    assert_eq!(
        b.validate().unwrap_err().to_string(),
        "offsets: has 0 entries, expected 1"
    );
    let mut b = RecordBatch::new(0);
    b.push_with_headers(None, b"x", &[("n", b"v")], 0, 0);
    let parts = b.columns.parts_mut();
    parts.headers.pop();
    parts.header_ends[0] -= 1;
    assert!(b.validate().unwrap_err().to_string().contains("truncated"));
}

#[test]
fn state_keys_hold_only_while_every_record_has_one() {
    let mut b = RecordBatch::new(0);
    b.push(None, b"a", 0, 0);
    b.push(None, b"b", 0, 1);
    assert!(!b.has_state_keys());
    let column = |keys: &[&[u8]]| {
        let mut c = StateKeys::default();
        keys.iter().for_each(|k| c.push(k));
        c
    };
    b.set_state_keys(column(&[b"k1"]));
    assert!(!b.has_state_keys(), "one key for two records is none");
    b.set_state_keys(column(&[b"k1", b""]));
    assert_eq!(
        (b.state_key(0), b.state_key(1)),
        (Some(&b"k1"[..]), Some(&b""[..]))
    );
    b.validate().unwrap();
    // Copies keep their keys; a record added without one ends the column.
    let mut c = RecordBatch::new(0);
    c.push_record(&b.get(1));
    c.push_record(&b.get(0));
    assert_eq!(c.get(1).state_key, Some(&b"k1"[..]));
    c.push(None, b"c", 0, 2);
    assert_eq!((c.has_state_keys(), c.get(0).state_key), (false, None));
    c.push_record(&b.get(0));
    assert_eq!(c.state_key(3), None, "never the wrong record's key");
    assert!(c.byte_len() > 0);
    c.clear();
    c.push_record(&b.get(0));
    assert!(c.has_state_keys(), "a cleared batch starts a new column");
    b.state_keys.ends[1] = 9;
    assert!(
        b.validate()
            .unwrap_err()
            .to_string()
            .contains("state-key-ends")
    );
}
