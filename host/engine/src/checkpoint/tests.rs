use super::*;

#[test]
fn a_locked_checkpoint_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    let held = store.lock().unwrap();
    let err = store.lock().unwrap_err().to_string();
    let pid = std::process::id();
    assert!(
        err.contains(&format!("in use by another weir process (pid {pid})")),
        "{err}"
    );
    drop(held);
    store.lock().unwrap();
}

#[test]
fn a_write_once_file_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    store.create("commits/7", b"first").unwrap();
    // The same bytes again: a retry of one's own write.
    store.create("commits/7", b"first").unwrap();
    let err = store.create("commits/7", b"second").unwrap_err();
    assert!(matches!(err, CheckpointError::Conflict { .. }), "{err}");
    assert!(err.to_string().contains("write conflict"), "{err}");
    assert_eq!(store.read("commits/7").unwrap().unwrap(), b"first");
    // Of many racing writers exactly one wins.
    let wins: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let store = &store;
                s.spawn(move || store.create("offsets/1", format!("{i}").as_bytes()).is_ok())
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap() as usize)
            .sum()
    });
    assert_eq!(wins, 1);
    assert_eq!(
        std::fs::read_dir(dir.path().join("offsets"))
            .unwrap()
            .count(),
        1,
        "no temp files left"
    );
}

#[test]
fn entries_round_trip_and_corruption_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    store
        .write("offsets/3", &encode_entry(&vec![1, 2]))
        .unwrap();
    store.write("offsets/10", &encode_entry(&vec![3])).unwrap();
    assert_eq!(store.list_numbered("offsets").unwrap(), vec![3, 10]);
    let v: Option<Vec<i32>> = read_entry(&store, "offsets/3").unwrap();
    assert_eq!(v, Some(vec![1, 2]));
    store.write("offsets/4", b"v1\n{\"batch").unwrap();
    let err = read_entry::<Vec<i32>>(&store, "offsets/4")
        .unwrap_err()
        .to_string();
    assert!(err.contains("offsets/4: invalid entry: "), "{err}");
    store.write("offsets/5", b"").unwrap();
    let err = read_entry::<Vec<i32>>(&store, "offsets/5")
        .unwrap_err()
        .to_string();
    assert!(err.contains("offsets/5: file is empty"), "{err}");
    assert!(
        read_entry::<Vec<i32>>(&store, "offsets/99")
            .unwrap()
            .is_none()
    );
}
