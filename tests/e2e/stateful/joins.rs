//! Stream-stream joins run by the real `weir run`: orders and payments in
//! two embedded-log topics (partitioned differently), joined by the
//! `orders-payments` example guest, inner and outer, in both modes,
//! straight and with SIGKILLs, against the join computed here by its
//! definition. And the join's state: it levels off over a long run and
//! empties once the final watermark has passed.

use std::collections::BTreeMap;
use std::path::Path;

use weir::engine::RecordBatch;
use weir::log::Topic;

use super::{BASE, faults_at, faults_nth, random_kills_of};
use crate::testkit::{guest, run_command, run_ok, topic_values, xorshift};

/// A payment matches an order when its time is at most 1 s earlier and
/// 5 s later than the order's.
const BEFORE_MS: i64 = 1_000;
const AFTER_MS: i64 = 5_000;

/// (order id, user, order time) and (order id, amount, payment time).
pub(crate) type Order = (String, String, i64);
pub(crate) type Payment = (String, i64, i64);

/// `n` orders 50 ms apart, each up to 2 s out of order; most are paid
/// from 2 s before to 7 s after (so some fall outside the range), every
/// 10th not at all, and every 10th payment names an order that does not
/// exist.
pub(crate) fn inputs(n: usize, seed: u64) -> (Vec<Order>, Vec<Payment>) {
    let mut next = xorshift(seed);
    let mut orders = Vec::new();
    let mut pays = Vec::new();
    for i in 0..n {
        let ts = BASE + i as i64 * 50 - (next() % 2_000) as i64;
        orders.push((format!("o-{i}"), format!("user-{}", i % 7), ts));
        if i % 10 == 0 {
            continue;
        }
        let id = if i % 10 == 5 {
            format!("x-{i}")
        } else {
            format!("o-{i}")
        };
        let pay_ts = ts - 2_000 + (next() % 9_000) as i64;
        pays.push((id, (i as i64 * 37) % 10_000, pay_ts));
    }
    // Payments arrive in payment-time order, give or take.
    pays.sort_by_key(|p| p.2 + (p.1 % 500));
    (orders, pays)
}

const DELAY_MS: i64 = 20_000;

/// The watermark after all input: each source's newest event time (each
/// partition's, in continuous mode), the smallest of those, less the delay.
pub(crate) fn final_watermark(orders: &[Order], pays: &[Payment], continuous: bool) -> i64 {
    let mut max: BTreeMap<(usize, usize), i64> = BTreeMap::new();
    let mut see = |source: usize, i: usize, ts: i64, n: usize| {
        let p = if continuous { i % n } else { 0 };
        let m = max.entry((source, p)).or_insert(ts);
        *m = (*m).max(ts);
    };
    for (i, o) in orders.iter().enumerate() {
        see(0, i, o.2, 2);
    }
    for (i, p) in pays.iter().enumerate() {
        see(1, i, p.2, 3);
    }
    max.values().min().unwrap() - DELAY_MS
}

/// The join by its definition: every matching pair, then (outer) every
/// row that matched nothing, once watermark `wm` rules out a match. Rows
/// as the guest writes them.
pub(crate) fn expected(kind: &str, orders: &[Order], pays: &[Payment], wm: i64) -> Vec<String> {
    let mut by_id: BTreeMap<&str, Vec<&Payment>> = BTreeMap::new();
    for p in pays {
        by_id.entry(&p.0).or_default().push(p);
    }
    let hit = |o: &Order, p: &Payment| p.2 >= o.2 - BEFORE_MS && p.2 <= o.2 + AFTER_MS;
    let mut out = Vec::new();
    let mut paid = std::collections::HashSet::new();
    for o in orders {
        let mut any = false;
        for p in by_id.get(o.0.as_str()).into_iter().flatten() {
            if hit(o, p) {
                any = true;
                paid.insert((p.0.clone(), p.2));
                out.push(format!(
                    r#"{{"order_id":"{}","user":"{}","amount":{}}}"#,
                    o.0, o.1, p.1
                ));
            }
        }
        if !any && matches!(kind, "left-outer" | "full-outer") && o.2 + AFTER_MS < wm {
            out.push(format!(
                r#"{{"order_id":"{}","user":"{}","amount":null}}"#,
                o.0, o.1
            ));
        }
    }
    if matches!(kind, "right-outer" | "full-outer") {
        for p in pays {
            if !paid.contains(&(p.0.clone(), p.2)) && p.2 + BEFORE_MS < wm {
                out.push(format!(
                    r#"{{"order_id":"{}","user":null,"amount":{}}}"#,
                    p.0, p.1
                ));
            }
        }
    }
    out.sort();
    out
}

/// A join pipeline over a fresh directory: topics `orders` (2
/// partitions) and `payments` (3), output topic `out`.
pub(crate) struct JoinFixture {
    dir: tempfile::TempDir,
    continuous: bool,
}

/// Write orders (over 2 partitions) and payments (over 3) to their topics
/// under `log`, creating them first when `create`.
pub(super) fn append(log: &Path, orders: &[Order], pays: &[Payment], create: bool) {
    let open = |name: &str, n: u32| {
        if create {
            Topic::create(log, name, n).unwrap()
        } else {
            Topic::open(log, name).unwrap()
        }
    };
    let mut t = open("orders", 2);
    let mut parts = vec![RecordBatch::new(0), RecordBatch::new(1)];
    for (i, (id, user, ts)) in orders.iter().enumerate() {
        let v = format!(r#"{{"order_id":"{id}","user":"{user}","ts":{ts}}}"#);
        parts[i % 2].push(None, v.as_bytes(), *ts, 0);
    }
    t.append(None, &parts, || {}).unwrap();
    let mut t = open("payments", 3);
    let mut parts = vec![
        RecordBatch::new(0),
        RecordBatch::new(1),
        RecordBatch::new(2),
    ];
    for (i, (id, amount, ts)) in pays.iter().enumerate() {
        let v = format!(r#"{{"order_id":"{id}","amount":{amount},"pay_ts":{ts}}}"#);
        parts[i % 3].push(None, v.as_bytes(), *ts, 0);
    }
    t.append(None, &parts, || {}).unwrap();
}

impl JoinFixture {
    pub(super) fn new(
        kind: &str,
        continuous: bool,
        orders: &[Order],
        pays: &[Payment],
    ) -> JoinFixture {
        let rust = guest("orders_payments").display().to_string();
        Self::with_component(kind, continuous, orders, pays, &rust, "")
    }

    /// As `new`, joined by `component`, with `transform` lines (grants)
    /// in its `[transform]`.
    pub(crate) fn with_component(
        kind: &str,
        continuous: bool,
        orders: &[Order],
        pays: &[Payment],
        component: &str,
        transform: &str,
    ) -> JoinFixture {
        let dir = tempfile::tempdir().unwrap();
        append(&dir.path().join("log"), orders, pays, true);
        // Batches of both sources cover about the same event time (there
        // are 9 payments to 10 orders), so neither runs ahead of the other.
        let (mode, orders_limit, pays_limit, trigger) = if continuous {
            (
                "mode = \"continuous\"\ncheckpoint-interval = \"20ms\"",
                "",
                "",
                "",
            )
        } else {
            (
                "",
                "max-records-per-trigger = 300",
                "max-records-per-trigger = 270",
                "[trigger]\ntype = \"available-now\"",
            )
        };
        let text = format!(
            r#"
name = "join"
checkpoint = "ckpt"
{mode}
[[source]]
name = "orders"
type = "log"
path = "log"
topic = "orders"
key-field = "order_id"
{orders_limit}
[[source]]
name = "payments"
type = "log"
path = "log"
topic = "payments"
key-field = "order_id"
event-time-field = "pay_ts"
{pays_limit}
[transform]
component = "{component}"
on-error = "fail"
{transform}
[transform.config]
join = "{kind}"
before = "1s"
after = "5s"
[event-time]
field = "ts"
delay = "{DELAY_MS}ms"
[state]
partitions = 4
snapshot-interval = 3
[sink.default]
type = "log"
path = "log"
topic = "out"
{trigger}
"#,
        );
        std::fs::write(dir.path().join("p.toml"), text).unwrap();
        JoinFixture { dir, continuous }
    }

    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn command(&self) -> std::process::Command {
        run_command(self.path(), self.continuous.then_some("400ms"))
    }

    pub(crate) fn output(&self) -> Vec<String> {
        let mut got = topic_values(&self.path().join("log"), "out").unwrap_or_default();
        got.sort();
        got
    }
}

/// Both join kinds in one mode: straight, then with SIGKILLs at fault
/// points and at random, each against the join's definition.
fn joins_equal_their_definition(continuous: bool) {
    let (orders, pays) = inputs(1_500, 0x0bad_cafe);
    let wm = final_watermark(&orders, &pays, continuous);
    for kind in ["inner", "full-outer"] {
        let want = expected(kind, &orders, &pays, wm);
        let straight = JoinFixture::new(kind, continuous, &orders, &pays);
        run_ok(straight.command());
        same(&straight.output(), &want, &format!("{kind}, straight"));
        let crashed = JoinFixture::new(kind, continuous, &orders, &pays);
        let faults = if continuous {
            faults_nth(&[2, 5])
        } else {
            faults_at(&[1, 4])
        };
        let mut kills = 0;
        for f in faults {
            let out = crashed.command().env("WEIR_FAULT", &f).output().unwrap();
            kills += usize::from(!out.status.success());
        }
        assert!(kills > 0, "no fault point was reached");
        kills += random_kills_of(&|| crashed.command(), 0x5eed, 6);
        run_ok(crashed.command());
        same(
            &crashed.output(),
            &want,
            &format!("{kind}, after {kills} SIGKILLs"),
        );
    }
}

#[test]
fn inner_and_outer_joins_equal_their_definition_in_micro_batch_mode() {
    joins_equal_their_definition(false);
}

#[test]
fn inner_and_outer_joins_equal_their_definition_in_continuous_mode() {
    joins_equal_their_definition(true);
}

/// Panics with what is missing and what is extra (the first few of each).
pub(crate) fn same(got: &[String], want: &[String], what: &str) {
    if got == want {
        return;
    }
    let (g, w): (std::collections::BTreeSet<_>, std::collections::BTreeSet<_>) =
        (got.iter().collect(), want.iter().collect());
    let missing: Vec<_> = w.difference(&g).take(8).collect();
    let extra: Vec<_> = g.difference(&w).take(8).collect();
    panic!(
        "{what}: {} rows, {} expected; missing {missing:?}; extra {extra:?}",
        got.len(),
        want.len()
    );
}

#[test]
fn join_state_levels_off_and_empties_after_the_final_watermark() {
    // A full outer join keeps every row until its timer; an inner join's
    // rows leave through expiries, with no guest call.
    for kind in ["full-outer", "inner"] {
        levels_off(kind);
    }
}

fn levels_off(kind: &str) {
    let (mut orders, mut pays) = inputs(12_000, 0x1e7e1);
    // One order and its payment an hour later move the final watermark
    // past every other row.
    let end = orders.iter().map(|o| o.2).max().unwrap() + 3_600_000;
    orders.push(("o-end".into(), "user-0".into(), end));
    pays.push(("o-end".into(), 1, end));
    let f = JoinFixture::new(kind, false, &orders, &pays);
    let out = crate::testkit::weir()
        .arg("run")
        .arg(f.path().join("p.toml"))
        .args(["--progress", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ops: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|p| p["stateOperators"].get(0).cloned())
        .collect();
    let sum = |field: &str| {
        ops.iter()
            .map(|o| o.pointer(field).and_then(|v| v.as_u64()).unwrap())
            .sum::<u64>()
    };
    let rows: Vec<u64> = ops
        .iter()
        .map(|o| o["numRowsTotal"].as_u64().unwrap())
        .collect();
    assert!(rows.len() > 40, "{} batches", rows.len());
    // Every row that entered state (none late here) left it, but the two
    // that stay: the removals counted in progress add up.
    assert_eq!(sum("/numRowsDroppedByWatermark"), 0, "{kind}");
    let left = (orders.len() + pays.len()) as u64 - 2;
    assert_eq!(sum("/numRowsRemoved"), left, "{kind}: numRowsRemoved");
    let (timers, expiries) = match kind {
        "inner" => (0, left),
        _ => (left, 0),
    };
    assert_eq!(
        (
            sum("/customMetrics/numTimersFired"),
            sum("/customMetrics/numExpiriesFired")
        ),
        (timers, expiries),
        "{kind}: timers and expiries fired"
    );
    // 24 k rows went through; about 25 s of event time (delay and range)
    // of them, some 1,000 rows, are in state at any time.
    let (first, second) = rows[..rows.len() - 1].split_at(rows.len() / 2);
    let (peak1, peak2) = (first.iter().max().unwrap(), second.iter().max().unwrap());
    assert!(
        *peak2 <= peak1 + peak1 / 4 && *peak2 < 2_500,
        "{kind}: state keeps growing: {peak1} then {peak2} rows ({rows:?})"
    );
    assert_eq!(
        rows.last(),
        Some(&2),
        "{kind}: only the last order and payment stay ({rows:?})"
    );
    let want = expected(kind, &orders, &pays, end - DELAY_MS);
    same(&f.output(), &want, &format!("{kind}, long run"));
}

#[test]
fn continuous_mode_feeds_several_sources_only_to_a_stateful_transform() {
    let (orders, pays) = inputs(10, 1);
    let f = JoinFixture::new("inner", true, &orders, &pays);
    let p = f.path().join("p.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    // The same two sources into the stateless uppercase guest.
    let start = text.find("[transform]").unwrap();
    let end = text.find("[event-time]").unwrap();
    let stateless = format!(
        "{}[transform]\ncomponent = \"{}\"\n{}",
        &text[..start],
        guest("uppercase").display(),
        &text[end..text.find("[state]").unwrap()]
    ) + &text[text.find("[sink.default]").unwrap()..];
    std::fs::write(&p, stateless.replace("key-field = \"order_id\"\n", "")).unwrap();
    let out = f.command().output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("continuous mode feeds several sources only to a stateful transform"),
        "{err}"
    );
}

#[test]
fn a_join_outgrowing_its_state_limit_stops_naming_the_limit() {
    // Every row is put and given an expiry, each a write the limit checks:
    // past 4 KiB of state the call fails, the guard isolates the record,
    // and `on-error = "fail"` stops the run naming the limit.
    let (orders, pays) = inputs(200, 0x5a7e);
    let rust = guest("orders_payments").display().to_string();
    let limits = "[transform.limits]\nstate = \"4KiB\"";
    let f = JoinFixture::with_component("inner", false, &orders, &pays, &rust, limits);
    let out = crate::testkit::weir()
        .arg("run")
        .arg(f.path().join("p.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("guest exceeded its keyed state limit of 4096 bytes"),
        "{err}"
    );
}
