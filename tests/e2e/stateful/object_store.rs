//! Checkpoints on object storage, against a real S3-compatible server
//! (moto, started by the tests through `scripts/s3-server`) and, for the
//! store contract, against local disk too.

use std::time::{Duration, Instant};

use weir_connectors::checkpoints::ObjectCheckpointStore;
use weir_engine::{CheckpointError, CheckpointStore, LocalCheckpointStore};

use super::examples::{window_expected, window_inputs, window_spec};
use super::{Fixture, faults_at, faults_nth, golden_with};
use crate::testkit::{s3_bucket, s3_env, s3_options};

fn s3_store(bucket: &str, prefix: &str) -> ObjectCheckpointStore {
    let options = s3_options();
    let options: Vec<(&str, &str)> = options.iter().map(|(k, v)| (*k, v.as_str())).collect();
    ObjectCheckpointStore::open(&format!("s3://{bucket}/{prefix}"), &options).unwrap()
}

/// What the engine relies on from any checkpoint store.
fn contract(store: &dyn CheckpointStore) {
    assert_eq!(store.read("offsets/0").unwrap(), None);
    store.write("progress", b"one").unwrap();
    store.write("progress", b"two").unwrap();
    assert_eq!(store.read("progress").unwrap().unwrap(), b"two");
    for n in [10u64, 2, 33] {
        store.create(&format!("offsets/{n}"), b"entry").unwrap();
    }
    store.write("offsets/not-a-batch", b"x").unwrap();
    store.write("offsets/sub/7", b"x").unwrap();
    assert_eq!(store.list_numbered("offsets").unwrap(), vec![2, 10, 33]);
    assert_eq!(
        store.list_numbered("nothing-here").unwrap(),
        Vec::<u64>::new()
    );
    // Write-once: the same bytes again pass (a retried request), other
    // bytes are a conflict and leave the first write in place.
    store.create("offsets/2", b"entry").unwrap();
    let err = store.create("offsets/2", b"other").unwrap_err();
    assert!(matches!(err, CheckpointError::Conflict { .. }), "{err}");
    assert!(err.to_string().contains("offsets/2"), "{err}");
    assert_eq!(store.read("offsets/2").unwrap().unwrap(), b"entry");
    // Racing writers of one file: exactly one wins.
    let wins: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| s.spawn(move || store.create("commits/5", format!("writer {i}").as_bytes())))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap().is_ok() as usize)
            .sum()
    });
    assert_eq!(wins, 1, "{}", store.location());
    store.delete("offsets/10").unwrap();
    store.delete("offsets/10").unwrap();
    assert_eq!(store.list_numbered("offsets").unwrap(), vec![2, 33]);
}

#[test]
fn the_checkpoint_store_contract_holds_on_s3_and_on_disk() {
    let bucket = s3_bucket("contract");
    contract(&s3_store(&bucket, "some/prefix"));
    // Another prefix of the same bucket is another checkpoint.
    assert_eq!(s3_store(&bucket, "other").read("progress").unwrap(), None);
    let dir = tempfile::tempdir().unwrap();
    contract(&LocalCheckpointStore::open(dir.path()).unwrap());
}

#[test]
fn an_object_store_checkpoint_is_locked_by_a_lease() {
    let bucket = s3_bucket("lease");
    let a = s3_store(&bucket, "ckpt");
    let b = s3_store(&bucket, "ckpt");
    let held = a.lock().unwrap();
    // The holder renews its lease: a second process is refused.
    let err = b.lock().unwrap_err().to_string();
    assert!(err.contains("in use by another weir process"), "{err}");
    // Released at drop: taken at once.
    drop(held);
    let started = Instant::now();
    let held = b.lock().unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(held);
    // A holder on this host whose process is gone (SIGKILL): at once.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let dead = |host: &str| {
        format!(
            r#"{{"owner":"x","host":"{}","pid":4000000,"renewals":3,"released":false}}"#,
            host.trim()
        )
    };
    a.write("lock", dead(&host).as_bytes()).unwrap();
    let started = Instant::now();
    drop(b.lock().unwrap());
    assert!(started.elapsed() < Duration::from_secs(2));
    // A holder elsewhere that stopped renewing: after its lease expires.
    a.write("lock", dead("another-machine").as_bytes()).unwrap();
    let started = Instant::now();
    drop(b.lock().unwrap());
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn unsupported_checkpoint_urls_are_refused_clearly() {
    let err = ObjectCheckpointStore::open("ftp://host/x", &[])
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("unsupported scheme `ftp`"),
        "{err}"
    );
}

/// The windowed count with its checkpoint (offsets, commits, state) in a
/// bucket: straight, and SIGKILLed at every step then restarted.
#[test]
fn windowed_count_checkpointed_on_s3_in_both_modes() {
    let inputs = window_inputs(2000);
    let expected = window_expected(&inputs);
    let on_s3 = |spec: &super::Spec<'_>, inputs: &[super::Input]| {
        let url = format!("s3://{}/pipelines/window", s3_bucket("window"));
        Fixture::with_checkpoint(spec, inputs, &url, s3_env())
    };
    golden_with(
        &window_spec(false),
        &inputs,
        &expected,
        &faults_at(&[1, 3]),
        &on_s3,
    );
    golden_with(
        &window_spec(true),
        &inputs,
        &expected,
        &faults_nth(&[1, 2]),
        &on_s3,
    );
}
