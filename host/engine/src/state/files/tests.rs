use super::*;
use crate::checkpoint::LocalCheckpointStore;
use crate::state::{StateBackend, TimeDomain};

/// The backend these tests run on; `disk_backend_behaves_the_same` runs
/// the main scenario on the other one.
const B: StateBackend = StateBackend::Memory;

fn opts(interval: u64, keep: u64) -> StateFileOptions {
    StateFileOptions {
        snapshot_interval: interval,
        keep_versions: keep,
        backend: B,
        write_once: false,
    }
}

/// Write versions 1..=n where version v holds keys 0..v with value v.
fn write_versions(store: &dyn CheckpointStore, n: u64, o: &StateFileOptions) {
    let mut p = StatePartition::load(store, "state/0/0", 0, B).unwrap();
    for v in 1..=n {
        p.state
            .put(format!("k{v}").as_bytes(), v.to_string().into_bytes());
        p.state.put(b"last", v.to_string().into_bytes());
        p.commit(store, o).unwrap();
        assert_eq!(p.version, v);
    }
}

#[test]
fn every_version_loads_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    write_versions(&store, 12, &opts(5, 100));
    assert_eq!(
        store.list_numbered("state/0/0/snapshots").unwrap(),
        vec![1, 6, 11]
    );
    for v in 1..=12u64 {
        let p = StatePartition::load(&store, "state/0/0", v, B).unwrap();
        assert_eq!(p.state.rows(), v + 1, "version {v}");
        assert_eq!(
            p.state.get(b"last").as_deref(),
            Some(v.to_string().as_bytes())
        );
        assert!(p.state.get(format!("k{}", v + 1).as_bytes()).is_none());
    }
    // A re-run from version 7 (other content this time, as in continuous
    // mode) replaces the later versions; stale files of the crashed run at
    // the same versions are never read.
    let mut p = StatePartition::load(&store, "state/0/0", 7, B).unwrap();
    p.state.put(b"rerun", b"1".to_vec());
    for _ in 0..5 {
        p.commit(&store, &opts(5, 100)).unwrap();
    }
    for v in 8..=12u64 {
        let q = StatePartition::load(&store, "state/0/0", v, B).unwrap();
        assert_eq!(
            q.state.get(b"rerun").as_deref(),
            Some(&b"1"[..]),
            "version {v}"
        );
    }
}

#[test]
fn timers_and_deletions_survive_reload() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    let o = opts(10, 100);
    let mut p = StatePartition::load(&store, "state/1/3", 0, B).unwrap();
    p.state.put(b"a", b"1".to_vec());
    p.state.register_timer(TimeDomain::EventTime, b"a", 100);
    p.commit(&store, &o).unwrap();
    p.state.delete(b"a");
    p.state.put(b"b", b"2".to_vec());
    p.commit(&store, &o).unwrap();
    let mut q = StatePartition::load(&store, "state/1/3", 2, B).unwrap();
    assert_eq!(q.state.get(b"a"), None);
    assert_eq!(q.state.get(b"b").as_deref(), Some(&b"2"[..]));
    assert_eq!(q.state.take_due(TimeDomain::EventTime, 100).len(), 1);
    // A partition that never wrote anything loads empty at any version.
    let empty = StatePartition::load(&store, "state/1/4", 9, B).unwrap();
    assert_eq!(empty.state.rows(), 0);
}

#[test]
fn old_versions_are_pruned_but_kept_ones_load() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    write_versions(&store, 30, &opts(5, 8));
    let snaps = store.list_numbered("state/0/0/snapshots").unwrap();
    let deltas = store.list_numbered("state/0/0/deltas").unwrap();
    // At version 26 versions >= 18 must stay loadable: snapshot 16 is the base.
    assert_eq!(snaps, vec![16, 21, 26]);
    assert!(deltas.iter().all(|&d| d > 16), "{deltas:?}");
    for v in 22..=30 {
        StatePartition::load(&store, "state/0/0", v, B).unwrap();
    }
}

#[test]
fn missing_and_corrupt_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    write_versions(&store, 4, &opts(10, 100));
    let bytes = store.read("state/0/0/deltas/3").unwrap().unwrap();
    let mut torn = bytes.clone();
    let n = torn.len();
    torn[n - 6] ^= 0xff;
    store.write("state/0/0/deltas/3", &torn).unwrap();
    let err = StatePartition::load(&store, "state/0/0", 4, B)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("state/0/0/deltas/3: corrupt state file: checksum mismatch"),
        "{err}"
    );
    store.write("state/0/0/deltas/3", &bytes[..10]).unwrap();
    let err = StatePartition::load(&store, "state/0/0", 4, B)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("deltas/3: corrupt state file: not a weir state file"),
        "{err}"
    );
    store.delete("state/0/0/deltas/3").unwrap();
    let err = StatePartition::load(&store, "state/0/0", 4, B)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("state/0/0/deltas/3: missing: needed to load state version 4 of state/0/0"),
        "{err}"
    );
    store.delete("state/0/0/snapshots/1").unwrap();
    let err = StatePartition::load(&store, "state/0/0", 2, B)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("state/0/0/snapshots: no snapshot at or below version 2"),
        "{err}"
    );
}

#[test]
fn disk_backend_behaves_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    let o = StateFileOptions {
        snapshot_interval: 4,
        keep_versions: 100,
        backend: StateBackend::Disk,
        write_once: false,
    };
    let mut p = StatePartition::load(&store, "state/0/0", 0, StateBackend::Disk).unwrap();
    for v in 1..=9u64 {
        for k in 0..50u64 {
            p.state
                .put(format!("k{v}-{k}").as_bytes(), v.to_le_bytes().to_vec());
        }
        p.state.delete(format!("k{}-0", v - 1).as_bytes());
        p.state
            .register_timer(TimeDomain::EventTime, b"t", v as i64);
        p.commit(&store, &o).unwrap();
    }
    assert_eq!(p.state.take_due(TimeDomain::EventTime, 3).len(), 3);
    for (backend, v) in [
        (StateBackend::Memory, 9),
        (StateBackend::Disk, 9),
        (StateBackend::Disk, 6),
    ] {
        let q = StatePartition::load(&store, "state/0/0", v, backend).unwrap();
        assert_eq!(q.state.rows(), v * 50 - (v - 1), "{backend:?} version {v}");
        assert_eq!(
            q.state.get(b"k5-3").as_deref(),
            Some(&5u64.to_le_bytes()[..])
        );
        assert_eq!(q.state.scan_prefix(b"k2-", None, 1000).len(), 49);
        assert_eq!(q.state.scan(b"k3", Some(b"k4"), 1000).len(), 49);
    }
}

/// Every raw entry of a state, in key order.
fn entries(s: &KeyedState) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    s.for_each_raw(|k, v| out.push((k.to_vec(), v.to_vec())));
    out
}

#[test]
fn random_changes_reload_exactly_on_both_backends() {
    // Puts, overwrites, removals, timers registered, deleted and fired,
    // and calls rolled back, over keys sharing long prefixes: each version
    // loads from its files equal to the state that wrote it, on either
    // backend, whichever backend wrote it.
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for (i, backend) in [StateBackend::Memory, StateBackend::Disk]
        .into_iter()
        .enumerate()
    {
        let part = format!("state/0/{i}");
        let o = StateFileOptions {
            snapshot_interval: 5,
            backend,
            ..opts(5, 100)
        };
        let mut p = StatePartition::load(&store, &part, 0, backend).unwrap();
        let mut history = Vec::new();
        let mut expiries = Vec::new();
        for _ in 0..12 {
            for _ in 0..300 {
                let key = format!("shared-prefix/{}", next(60)).into_bytes();
                let guarded = next(8) == 0;
                if guarded {
                    p.state.begin_call();
                }
                match next(9) {
                    0 | 1 => p.state.put(&key, next(1000).to_string().into_bytes()),
                    6 => {
                        let at = next(50) as i64;
                        p.state.register_expiry(TimeDomain::EventTime, &key, at);
                        expiries.push((key, at));
                    }
                    // Mostly a registered expiry (perhaps one already due).
                    7 => {
                        let (key, at) = match expiries.len() {
                            0 => (key, next(50) as i64),
                            n => expiries.swap_remove(next(n as u64) as usize),
                        };
                        p.state.cancel_expiry(TimeDomain::EventTime, &key, at);
                    }
                    8 => {
                        p.state.expire_due(TimeDomain::EventTime, next(20) as i64);
                    }
                    2 => p.state.delete(&key),
                    3 => p
                        .state
                        .register_timer(TimeDomain::EventTime, &key, next(50) as i64),
                    4 => p
                        .state
                        .delete_timer(TimeDomain::EventTime, &key, next(50) as i64),
                    _ => {
                        let due = p.state.take_due(TimeDomain::EventTime, next(20) as i64);
                        assert!(due.windows(2).all(|w| w[0].time <= w[1].time));
                    }
                }
                if guarded {
                    if next(2) == 0 {
                        p.state.rollback_call();
                    } else {
                        p.state.end_call();
                    }
                }
            }
            p.commit(&store, &o).unwrap();
            history.push(entries(&p.state));
        }
        for (v, want) in history.iter().enumerate() {
            for b in [StateBackend::Memory, StateBackend::Disk] {
                let q = StatePartition::load(&store, &part, v as u64 + 1, b).unwrap();
                assert!(
                    entries(&q.state) == *want,
                    "{backend:?}-written version {} loaded on {b:?} differs",
                    v + 1
                );
            }
        }
    }
}

#[test]
fn a_rolled_back_call_leaves_state_and_counts_as_before() {
    for backend in [StateBackend::Memory, StateBackend::Disk] {
        let mut s = KeyedState::new(backend).unwrap();
        s.put(b"k", b"1".to_vec());
        s.register_timer(TimeDomain::EventTime, b"k", 5);
        let (before, rows, bytes) = (entries(&s), s.rows(), s.memory_bytes());
        let (puts, removals) = (s.rows_updated(), s.rows_removed());
        s.begin_call();
        s.put(b"k", b"22".to_vec());
        s.put(b"n", b"3".to_vec());
        s.delete(b"k");
        s.register_timer(TimeDomain::EventTime, b"t", 1);
        s.delete_timer(TimeDomain::EventTime, b"k", 5);
        s.rollback_call();
        assert_eq!(entries(&s), before, "{backend:?}");
        assert_eq!(
            (
                s.rows(),
                s.memory_bytes(),
                s.rows_updated(),
                s.rows_removed()
            ),
            (rows, bytes, puts, removals),
            "{backend:?}"
        );
    }
}

#[test]
fn version_1_files_load_and_unknown_entries_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    let mut p = StatePartition::load(&store, "state/0/0", 0, StateBackend::Memory).unwrap();
    p.state.put(b"k", b"v".to_vec());
    p.state.register_timer(TimeDomain::EventTime, b"k", 5);
    p.commit(&store, &opts(10, 100)).unwrap();
    let file = dir.path().join("state/0/0/snapshots/1");
    let rewrite = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = std::fs::read(&file).unwrap();
        b.truncate(b.len() - 4);
        f(&mut b);
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        std::fs::write(&file, b).unwrap();
    };
    // A version-1 file (no expiries could be in it) reads as before.
    rewrite(&|b| b[..8].copy_from_slice(MAGIC_V1));
    let q = StatePartition::load(&store, "state/0/0", 1, StateBackend::Memory).unwrap();
    assert_eq!(entries(&q.state), entries(&p.state));
    // An entry in a namespace this weir does not know is refused by name.
    // The first entry's key follows the header (25 bytes), its tag and its
    // length; its first byte is the namespace.
    rewrite(&|b| b[25 + 1 + 4] = 9);
    let e = StatePartition::load(&store, "state/0/0", 1, StateBackend::Memory).unwrap_err();
    assert!(e.to_string().contains("unknown kind"), "{e}");
}

#[test]
fn timers_and_expiries_fired_from_the_front_leave_the_delta_as_one_entry() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    let mut p = StatePartition::load(&store, "state/0/0", 0, StateBackend::Memory).unwrap();
    for t in 0..100 {
        let key = format!("k{t:03}").into_bytes();
        p.state.put(&key, b"v".to_vec());
        p.state.register_timer(TimeDomain::EventTime, b"k", t);
        p.state.register_expiry(TimeDomain::EventTime, &key, t);
    }
    p.commit(&store, &opts(10, 100)).unwrap();
    assert_eq!(p.state.take_due(TimeDomain::EventTime, 49).len(), 50);
    // 80 keys go with their expiries, the first one written again first
    // (the expiry removes it all the same).
    p.state.put(b"k000", b"w".to_vec());
    assert_eq!(p.state.expire_due(TimeDomain::EventTime, 79), 80);
    assert_eq!(p.state.rows(), 20);
    // Registered again after the range went: put after the removal.
    p.state.register_timer(TimeDomain::EventTime, b"k", 7);
    p.commit(&store, &opts(10, 100)).unwrap();
    let delta = std::fs::read(dir.path().join("state/0/0/deltas/2")).unwrap();
    let count = u64::from_le_bytes(delta[17..25].try_into().unwrap());
    // The expiries were in the last version: their keys' removals go with
    // the expiries' range (a key written since ends absent all the same).
    assert_eq!(count, 3, "two range removals and one put");
    reloads_as(&store, &p, 2);
}

#[test]
fn a_cancelled_expiry_keeps_its_key_when_later_ones_fire() {
    // The cancellation is listed before the fired range: loading must not
    // take the cancelled expiry for a fired one.
    let dir = tempfile::tempdir().unwrap();
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    let mut p = StatePartition::load(&store, "state/0/0", 0, StateBackend::Memory).unwrap();
    p.state.put(b"a", b"1".to_vec());
    p.state.put(b"b", b"2".to_vec());
    p.state.register_expiry(TimeDomain::EventTime, b"a", 5);
    p.state.register_expiry(TimeDomain::EventTime, b"b", 10);
    p.commit(&store, &opts(10, 100)).unwrap();
    p.state.cancel_expiry(TimeDomain::EventTime, b"a", 5);
    assert_eq!(p.state.expire_due(TimeDomain::EventTime, 10), 1);
    assert_eq!(p.state.get(b"a").as_deref(), Some(&b"1"[..]));
    assert_eq!(p.state.get(b"b"), None);
    p.commit(&store, &opts(10, 100)).unwrap();
    reloads_as(&store, &p, 2);
}

/// Version `v` of `p`'s partition loads equal to `p` on either backend.
fn reloads_as(store: &LocalCheckpointStore, p: &StatePartition, v: u64) {
    for b in [StateBackend::Memory, StateBackend::Disk] {
        let q = StatePartition::load(store, &p.dir, v, b).unwrap();
        assert_eq!(entries(&q.state), entries(&p.state), "{b:?}");
    }
}
