//! The joins' fixture: generated orders and payments in two embedded-log
//! topics (partitioned differently), a pipeline joining them, and the join
//! computed here by its definition, which the runs are compared with.

use std::collections::BTreeMap;
use std::path::Path;

use weir_engine::RecordBatch;
use weir_log::Topic;

use super::super::BASE;
use crate::testkit::{guest, run_command, topic_values, xorshift};

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

pub(super) const DELAY_MS: i64 = 20_000;

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
pub(crate) fn append(log: &Path, orders: &[Order], pays: &[Payment], create: bool) {
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
    pub(crate) fn new(
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

    pub(crate) fn path(&self) -> &Path {
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
