//! Stream-stream joins run by the real `weir run`: orders and payments in
//! two embedded-log topics (partitioned differently), joined by the
//! `orders-payments` example guest, inner and outer, in both modes,
//! straight and with SIGKILLs, against the join computed here by its
//! definition. And the join's state: it levels off over a long run and
//! empties once the final watermark has passed.

mod fixture;

use fixture::DELAY_MS;
pub(crate) use fixture::{
    JoinFixture, Order, Payment, append, expected, final_watermark, inputs, same,
};

use super::{faults_at, faults_nth, random_kills_of};
use crate::testkit::{guest, run_ok};

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
    let (progress, _) =
        crate::testkit::progress_of(crate::testkit::progress_run(&f.path().join("p.toml")));
    let ops: Vec<serde_json::Value> = progress
        .iter()
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
    let out = f.command().output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("guest exceeded its keyed state limit of 4096 bytes"),
        "{err}"
    );
}
