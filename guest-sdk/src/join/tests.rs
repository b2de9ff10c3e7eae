use std::collections::BTreeMap;
use std::time::Duration;

use super::*;
use crate::state::Timer;
use crate::testing::{
    self, fire_timers, reset_state, run, set_output_mode, set_source, set_watermark,
};
use crate::{Batch, BatchOutput, Config, Output, Transform};

struct J(Join);

impl Transform for J {
    fn init(_: &Config) -> Result<Self, String> {
        unreachable!("built by the test")
    }
    fn process(&mut self, r: &Record<'_>, o: &mut Output<'_, '_>) -> Result<(), RecordError> {
        self.0.process(r, o)
    }
    fn process_batch(&mut self, b: &Batch<'_>, out: &mut BatchOutput) -> Result<(), String> {
        self.0.process_batch(b, out)
    }
    fn on_timer(&mut self, t: &Timer<'_>, out: &mut Output<'_, '_>) -> Result<(), String> {
        assert!(self.0.on_timer(t, out), "a join timer");
        Ok(())
    }
}

fn join(kind: JoinType) -> J {
    J(join_on(kind, false))
}

/// The test's join, keyed by record keys or (`by_state_keys`) by the keys
/// the host passes.
fn join_on(kind: JoinType, by_state_keys: bool) -> Join {
    let j = Join::new(kind, "orders", "payments");
    let j = if by_state_keys { j.on_state_keys() } else { j };
    j.within(Duration::from_millis(2), Duration::from_millis(5))
        .output(|j, out| {
            let v = |r: Option<Row<'_>>| {
                r.map_or("-".to_string(), |r| String::from_utf8_lossy(r.value).into())
            };
            out.extend_from_slice(format!("{}|{}", v(j.left), v(j.right)).as_bytes());
        })
}

/// A tiny deterministic generator (xorshift), so the test needs no crate.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// (side, key, event time, value).
type Row_ = (Side, String, i64, String);

/// The join by definition, over the rows that were not dropped as late.
fn reference(kind: JoinType, rows: &[Row_]) -> Vec<String> {
    let (l, r): (Vec<&Row_>, Vec<&Row_>) = rows.iter().partition(|x| x.0 == Side::Left);
    let hit = |a: &Row_, b: &Row_| a.1 == b.1 && b.2 >= a.2 - 2 && b.2 <= a.2 + 5;
    let mut out = Vec::new();
    for a in &l {
        for b in &r {
            if hit(a, b) {
                out.push(format!("{}|{}", a.3, b.3));
            }
        }
        if kind.keeps(Side::Left) && !r.iter().any(|b| hit(a, b)) {
            out.push(format!("{}|-", a.3));
        }
    }
    for b in &r {
        if kind.keeps(Side::Right) && !l.iter().any(|a| hit(a, b)) {
            out.push(format!("-|{}", b.3));
        }
    }
    out.sort();
    out
}

/// Feed random rows in random batches, each batch from one source, with
/// the host's watermark (smallest of each source's largest time, minus a
/// delay) and its late drops; at the end, the final watermark. Keys come
/// as record keys or (`by_state_keys`) only as the host's state keys.
fn simulate(kind: JoinType, seed: u64, by_state_keys: bool) -> (Vec<String>, Vec<String>) {
    reset_state();
    set_output_mode(OutputMode::Append);
    let mut rng = Rng(seed);
    let mut t = J(join_on(kind, by_state_keys));
    let delay = 6;
    let (mut wm, mut max): (Option<i64>, BTreeMap<bool, i64>) = (None, BTreeMap::new());
    let (mut kept, mut got) = (Vec::new(), Vec::new());
    let mut clock = [0i64, 0];
    let mut n = 0;
    while n < 400 {
        let side = if rng.below(2) == 0 {
            Side::Left
        } else {
            Side::Right
        };
        let s = index(side);
        let size = 1 + rng.below(12) as usize;
        let mut batch: Vec<(String, i64, String)> = Vec::new();
        for _ in 0..size {
            clock[s] += rng.below(3) as i64;
            // Out of order, mostly within the delay.
            let ts = clock[s] - rng.below(8) as i64;
            batch.push((
                format!("k{}", rng.below(6)),
                ts,
                format!("{}{n}", ["L", "R"][s]),
            ));
            n += 1;
        }
        set_watermark(wm);
        set_source(Some(["orders", "payments"][s]));
        let on_time: Vec<_> = batch
            .iter()
            .filter(|b| wm.is_none_or(|w| b.1 >= w))
            .collect();
        let recs: Vec<Record<'_>> = on_time
            .iter()
            .enumerate()
            .map(|(i, (k, ts, v))| {
                Record::new(v.as_bytes())
                    .with_key((!by_state_keys).then_some(k.as_bytes()))
                    .with_timestamp(*ts)
                    .with_position(0, i as i64 + n as i64 * 100)
            })
            .collect();
        let keys: Vec<&[u8]> = on_time.iter().map(|b| b.0.as_bytes()).collect();
        testing::set_state_keys(by_state_keys.then_some(&keys[..]));
        got.extend(
            run(&mut t, &recs)
                .unwrap()
                .values()
                .iter()
                .map(|v| v.to_string()),
        );
        kept.extend(
            on_time
                .iter()
                .map(|(k, ts, v)| (side, k.clone(), *ts, v.clone())),
        );
        set_source(None);
        testing::set_state_keys(None);
        got.extend(
            fire_timers(&mut t)
                .unwrap()
                .values()
                .iter()
                .map(|v| v.to_string()),
        );
        if let Some(m) = batch.iter().map(|b| b.1).max() {
            let e = max.entry(s == 0).or_insert(m);
            *e = (*e).max(m);
        }
        let next = max.values().min().map(|m| m - delay);
        wm = wm.max(next);
    }
    set_watermark(Some(i64::MAX - 1));
    got.extend(
        fire_timers(&mut t)
            .unwrap()
            .values()
            .iter()
            .map(|v| v.to_string()),
    );
    assert_eq!(testing::state_len(), 0, "every row left state at the end");
    got.sort();
    (got, reference(kind, &kept))
}

#[test]
fn every_join_type_equals_its_definition_over_shuffled_input() {
    for kind in [
        JoinType::Inner,
        JoinType::LeftOuter,
        JoinType::RightOuter,
        JoinType::FullOuter,
    ] {
        for seed in [1, 7, 42, 1234] {
            for by_state_keys in [false, true] {
                let (got, want) = simulate(kind, seed, by_state_keys);
                assert!(want.iter().any(|w| !w.contains('-')), "some pairs match");
                assert_eq!(got, want, "{kind:?}, seed {seed}, {by_state_keys}");
            }
        }
    }
}

#[test]
fn rows_wait_only_as_long_as_the_range_allows() {
    reset_state();
    set_output_mode(OutputMode::Append);
    let mut t = join(JoinType::LeftOuter);
    set_source(Some("orders"));
    let order = [Record::new(b"o").with_key(Some(b"k")).with_timestamp(100)];
    run(&mut t, &order).unwrap();
    // A payment may come up to 5 ms after the order: at watermark 105 it
    // still can, at 106 it cannot.
    set_watermark(Some(105));
    assert!(fire_timers(&mut t).unwrap().emitted.is_empty());
    assert_eq!(testing::state_len(), 1);
    set_watermark(Some(106));
    let out = fire_timers(&mut t).unwrap();
    assert_eq!(out.values(), vec!["o|-"]);
    assert_eq!(out.emitted[0].timestamp, 100);
    assert_eq!(out.emitted[0].key.as_deref(), Some(&b"k"[..]));
    assert_eq!(testing::state_len(), 0);
}

#[test]
fn misuse_is_explained() {
    reset_state();
    set_output_mode(OutputMode::Append);
    let rec = [Record::new(b"x").with_key(Some(b"k"))];
    set_source(Some("refunds"));
    let e = run(&mut join(JoinType::Inner), &rec).unwrap_err();
    assert!(
        e.contains("source `refunds`, which this join does not read"),
        "{e}"
    );
    set_source(Some("orders"));
    let mut no_range = J(Join::inner("orders", "payments"));
    let e = run(&mut no_range, &rec).unwrap_err();
    assert!(e.contains("Join::within"), "{e}");
    set_output_mode(OutputMode::Update);
    let e = run(&mut join(JoinType::Inner), &rec).unwrap_err();
    assert!(e.contains("output-mode = \"append\""), "{e}");
    set_output_mode(OutputMode::Append);
    let out = run(&mut join(JoinType::Inner), &[Record::new(b"x")]).unwrap();
    assert_eq!(out.rejected[0].1, "record has no key to join on");
}

#[test]
fn a_join_on_state_keys_reads_the_hosts_keys_per_batch_and_per_record() {
    reset_state();
    set_output_mode(OutputMode::Append);
    let mut t = J(join_on(JoinType::Inner, true));
    set_source(Some("orders"));
    // The value and record key say nothing of the join key: only the
    // host's state keys do.
    let orders = [
        Record::new(b"o1").with_key(Some(b"x")).with_timestamp(10),
        Record::new(b"o2").with_timestamp(10),
    ];
    testing::set_state_keys(Some(&[b"a", b"b"]));
    assert!(run(&mut t, &orders).unwrap().emitted.is_empty());
    set_source(Some("payments"));
    let pay = [Record::new(b"p").with_timestamp(12)];
    let out = testing::run_fn(&pay, |r, o| {
        testing::set_state_keys(Some(&[b"b"]));
        t.0.process(r, o)
    })
    .unwrap();
    assert_eq!(out.values(), ["o2|p"]);
    assert_eq!(out.emitted[0].key.as_deref(), Some(&b"b"[..]));
    // Keys the host did not pass, or too few of them, are a clear error.
    testing::set_state_keys(None);
    let e = run(&mut t, &pay).unwrap_err();
    assert!(e.contains("passed no state keys"), "{e}");
    testing::set_state_keys(Some(&[b"a", b"b"]));
    let e = run(&mut t, &pay).unwrap_err();
    assert!(e.contains("2 state keys for 1 records"), "{e}");
}
