//! Stream-static lookups run by the real `weir run`: the documented
//! orders-payments example (a join enriched from a users table) against a
//! reference computed here, and a table changed while a continuous query
//! runs, whose later batches see the new rows.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::joins::{JoinFixture, Order, Payment, append, inputs, same};
use crate::testkit::topic_values;

/// `examples/data/shop/<dir>/part-0.jsonl`, parsed.
fn shop(dir: &str) -> Vec<serde_json::Value> {
    let path = crate::testkit::repo_root()
        .join("examples/data/shop")
        .join(dir)
        .join("part-0.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_orders_payments_example_runs_as_documented() {
    let got = super::pipelines::run_example("orders-payments", "orders_payments", "shop");
    let orders: Vec<Order> = shop("orders")
        .iter()
        .map(|o| {
            let s = |k: &str| o[k].as_str().unwrap().to_string();
            (s("order_id"), s("user"), o["ts"].as_i64().unwrap())
        })
        .collect();
    let pays: Vec<Payment> = shop("payments")
        .iter()
        .map(|p| {
            let n = |k: &str| p[k].as_i64().unwrap();
            (
                p["order_id"].as_str().unwrap().to_string(),
                n("amount"),
                n("pay_ts"),
            )
        })
        .collect();
    let users = std::fs::read_to_string(
        crate::testkit::repo_root().join("examples/data/shop/ref/users.csv"),
    )
    .unwrap();
    let country: BTreeMap<&str, &str> = users
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(','))
        .collect();
    // The pipeline's range and delay: 0 s before, 1 min after, 10 s.
    let wm = orders
        .iter()
        .map(|o| o.2)
        .max()
        .unwrap()
        .min(pays.iter().map(|p| p.2).max().unwrap())
        - 10_000;
    let mut want = Vec::new();
    for o in &orders {
        let hits: Vec<&Payment> = pays
            .iter()
            .filter(|p| p.0 == o.0 && p.2 >= o.2 && p.2 <= o.2 + 60_000)
            .collect();
        let c = country
            .get(o.1.as_str())
            .map_or("null".to_string(), |c| format!("\"{c}\""));
        for p in &hits {
            want.push(format!(
                r#"{{"order_id":"{}","user":"{}","amount":{},"country":{c}}}"#,
                o.0, o.1, p.1
            ));
        }
        if hits.is_empty() && o.2 + 60_000 < wm {
            want.push(format!(
                r#"{{"order_id":"{}","user":"{}","amount":null,"country":{c}}}"#,
                o.0, o.1
            ));
        }
    }
    want.sort();
    assert!(
        want.iter().any(|w| w.contains("null,\"country\"")),
        "an unpaid order"
    );
    assert!(
        want.iter().any(|w| w.ends_with("\"country\":null}")),
        "a user not in the table"
    );
    same(&got, &want, "orders-payments example");
}

/// The users table of the reload test: every user of `inputs` in `country`.
fn users(country: &str) -> String {
    let mut t = "user,country\n".to_string();
    for u in 0..7 {
        t.push_str(&format!("user-{u},{country}\n"));
    }
    t
}

#[test]
fn a_lookup_table_changed_while_a_query_runs_is_reloaded() {
    let (orders, pays) = inputs(400, 0x100c);
    // The second half comes later, after the table changed.
    let (first_o, later_o) = orders.split_at(200);
    let cut = first_o.iter().map(|o| o.2).max().unwrap();
    let (first_p, later_p): (Vec<Payment>, Vec<Payment>) = pays
        .iter()
        .cloned()
        .partition(|p| first_o.iter().any(|o| o.0 == p.0) || (p.0.starts_with('x') && p.2 <= cut));
    let f = JoinFixture::new("inner", true, first_o, &first_p);
    std::fs::create_dir(f.path().join("ref")).unwrap();
    std::fs::write(f.path().join("ref/users.csv"), users("FR")).unwrap();
    let p = f.path().join("p.toml");
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "after = \"5s\"\n",
        "after = \"5s\"\nusers = \"/ref/users.csv\"\n[transform.sandbox.dirs]\n\"/ref\" = \"ref\"\n",
    );
    std::fs::write(&p, text).unwrap();
    // Idle long enough to outlast the table's change between the halves.
    let mut child = crate::testkit::weir()
        .arg("run")
        .arg(&p)
        .args(["--progress", "none", "--exit-when-idle", "3s"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pairs = |o: &[Order], p: &[Payment]| {
        o.iter()
            .map(|o| {
                p.iter()
                    .filter(|p| p.0 == o.0 && p.2 >= o.2 - 1_000 && p.2 <= o.2 + 5_000)
                    .count()
            })
            .sum::<usize>()
    };
    let mut wait_for = |n: usize| {
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("weir stopped early: {status}");
            }
            let got = topic_values(&f.path().join("log"), "out").unwrap_or_default();
            if got.len() >= n {
                return got;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{} of {n} rows",
                got.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let first = pairs(first_o, &first_p);
    wait_for(first);
    // A new table (another length, so another file status), then more input.
    std::fs::write(f.path().join("ref/users.csv"), users("JP-new")).unwrap();
    append(&f.path().join("log"), later_o, &later_p, false);
    let all = pairs(&orders, &pays);
    assert!(all > first + 50, "the second half has pairs of its own");
    wait_for(all);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let country: BTreeMap<String, String> = f
        .output()
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["order_id"].as_str().unwrap().to_string(),
                v["country"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(f.output().len(), all, "each pair once");
    for o in &orders {
        if let Some(c) = country.get(&o.0) {
            let want = if first_o.contains(o) { "FR" } else { "JP-new" };
            assert_eq!(c, want, "{}", o.0);
        }
    }
}
