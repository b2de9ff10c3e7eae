use super::*;
use crate::state::StateBackend;

#[test]
fn values_scans_and_counters() {
    let mut s = KeyedState::default();
    s.put(b"a1", b"x".to_vec());
    s.put(b"a2", b"y".to_vec());
    s.put(b"b1", b"z".to_vec());
    s.put(b"a1", b"xx".to_vec());
    assert_eq!(s.get(b"a1").as_deref(), Some(&b"xx"[..]));
    assert_eq!(s.rows(), 3);
    let keys = |v: Vec<(Vec<u8>, Vec<u8>)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(
        keys(s.scan_prefix(b"a", None, 10)),
        vec![b"a1".to_vec(), b"a2".to_vec()]
    );
    assert_eq!(
        keys(s.scan_prefix(b"a", Some(b"a1"), 10)),
        vec![b"a2".to_vec()]
    );
    assert_eq!(
        keys(s.scan(b"a2", Some(b"b2"), 10)),
        vec![b"a2".to_vec(), b"b1".to_vec()]
    );
    assert_eq!(keys(s.scan(b"", None, 2)).len(), 2);
    s.register_timer(TimeDomain::EventTime, b"k", 5);
    // Timers never show up in user scans or counts.
    assert_eq!(keys(s.scan(b"", None, 10)).len(), 3);
    assert_eq!(s.rows(), 3);
    s.delete(b"a2");
    s.delete(b"nope");
    assert_eq!(s.rows(), 2);
    let before = s.memory_bytes();
    s.delete(b"a1");
    assert!(s.memory_bytes() < before);
}

#[test]
fn timers_fire_in_time_order_including_negative_times() {
    let mut s = KeyedState::default();
    s.register_timer(TimeDomain::EventTime, b"b", 10);
    s.register_timer(TimeDomain::EventTime, b"a", 10);
    s.register_timer(TimeDomain::EventTime, b"c", -3);
    s.register_timer(TimeDomain::EventTime, b"d", 11);
    s.register_timer(TimeDomain::ProcessingTime, b"p", 1);
    s.delete_timer(TimeDomain::EventTime, b"d", 11);
    let due = s.take_due(TimeDomain::EventTime, 10);
    let got: Vec<_> = due.iter().map(|t| (t.time, t.key.clone())).collect();
    assert_eq!(
        got,
        vec![
            (-3, b"c".to_vec()),
            (10, b"a".to_vec()),
            (10, b"b".to_vec())
        ]
    );
    assert!(s.take_due(TimeDomain::EventTime, 100).is_empty());
    assert_eq!(s.take_due(TimeDomain::ProcessingTime, 1).len(), 1);
}

#[test]
fn a_failed_call_is_rolled_back() {
    let mut s = KeyedState::default();
    s.put(b"k", b"1".to_vec());
    s.drain_delta(|_| {});
    s.begin_call();
    s.put(b"k", b"2".to_vec());
    s.put(b"n", b"3".to_vec());
    s.delete(b"k");
    s.register_timer(TimeDomain::EventTime, b"t", 1);
    s.rollback_call();
    assert_eq!(s.get(b"k").as_deref(), Some(&b"1"[..]));
    assert_eq!(s.get(b"n"), None);
    assert_eq!(s.rows(), 1);
    assert!(s.take_due(TimeDomain::EventTime, 10).is_empty());
}

#[test]
fn expiries_delete_their_keys_without_firing() {
    for backend in [StateBackend::Memory, StateBackend::Disk] {
        let mut s = KeyedState::new(backend).unwrap();
        for k in [&b"a"[..], b"b", b"c"] {
            s.put(k, b"v".to_vec());
        }
        s.register_expiry(TimeDomain::EventTime, b"a", 10);
        s.register_expiry(TimeDomain::EventTime, b"b", 20);
        s.register_expiry(TimeDomain::EventTime, b"b", 20);
        s.register_expiry(TimeDomain::ProcessingTime, b"c", 5);
        s.register_expiry(TimeDomain::EventTime, b"c", 10);
        s.cancel_expiry(TimeDomain::EventTime, b"c", 10);
        s.register_timer(TimeDomain::EventTime, b"a", 10);
        assert_eq!(s.expire_due(TimeDomain::EventTime, 9), 0, "{backend:?}");
        assert_eq!(s.expire_due(TimeDomain::EventTime, 10), 1, "{backend:?}");
        assert_eq!(s.get(b"a"), None, "{backend:?}");
        // Only timers fire; the expiry of `b` stays, as does `c`'s
        // processing-time one.
        let fired = s.take_due(TimeDomain::EventTime, 100);
        assert_eq!(fired.len(), 1, "{backend:?}");
        assert_eq!(s.rows(), 2, "{backend:?}");
        // A key written again still goes at its expiry.
        s.put(b"b", b"w".to_vec());
        assert_eq!(s.expire_due(TimeDomain::EventTime, 20), 1, "{backend:?}");
        assert_eq!(s.get(b"b"), None, "{backend:?}");
        assert_eq!(
            s.expire_due(TimeDomain::EventTime, i64::MAX),
            0,
            "{backend:?}"
        );
        assert_eq!(
            s.expire_due(TimeDomain::ProcessingTime, 5),
            1,
            "{backend:?}"
        );
        assert_eq!(s.rows(), 0, "{backend:?}");
        assert_eq!(s.rows_removed(), 3, "{backend:?}");
    }
}

#[test]
fn a_rolled_back_call_withdraws_its_expiries() {
    let mut s = KeyedState::default();
    s.put(b"k", b"1".to_vec());
    s.begin_call();
    s.register_expiry(TimeDomain::EventTime, b"k", 1);
    s.rollback_call();
    assert_eq!(s.expire_due(TimeDomain::EventTime, 10), 0);
    assert_eq!(s.get(b"k").as_deref(), Some(&b"1"[..]));
}
