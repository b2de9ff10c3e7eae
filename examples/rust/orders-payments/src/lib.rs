//! Orders joined with their payments: a stream-stream join of two sources
//! on the order id, within an event-time range (Spark's `pay_ts BETWEEN ts
//! AND ts + 1 minute` by default), optionally enriched from a reference
//! table of users (a stream-static lookup).
//!
//! Config:
//! - `join`: `inner` (default), `left-outer`, `right-outer` or `full-outer`;
//! - `left` / `right`: the sources' names (default `orders` / `payments`);
//! - `before` / `after`: a payment matches an order when its time is at
//!   most `before` earlier and `after` later (default `0s` / `1m`);
//! - `users`: a CSV or JSON-lines file (in a granted directory) keyed by
//!   `user`; its `country` column is added to each output, reloaded when
//!   the file changes.
//!
//! The join key is the key the host routed each record by: the pipeline
//! keys both sources by `key-field = "order_id"` (a join needs its two
//! sides in the same state partitions, so that is its key anyway), and the
//! guest reads those keys from the host instead of parsing them again.
//!
//! Orders are `{"order_id","user","ts"}`, payments `{"order_id","amount",
//! "pay_ts"}`; output is `{"order_id","user","amount"}` (with `"country"`
//! when `users` is set), `null` for the side an outer row lacks.
//!
//! `weir new --lang rust --template join NAME` starts a project from this
//! file.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use weir_guest::join::{Join, JoinType, Joined};
use weir_guest::lookup::Table;
use weir_guest::state::Timer;
use weir_guest::{Batch, BatchOutput, Config, Output, Record, RecordError, Transform, host};

#[derive(Deserialize)]
struct Order<'a> {
    #[serde(borrow)]
    user: Option<&'a str>,
}

#[derive(Deserialize)]
struct Payment {
    amount: Option<i64>,
}

/// Fields in Spark's order (`select("order_id", "user", "amount")`).
#[derive(Serialize)]
struct Out<'a> {
    order_id: &'a str,
    user: Option<&'a str>,
    amount: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    country: Option<Option<&'a str>>,
}

pub struct OrdersPayments {
    join: Join,
    users: Option<Table>,
}

/// The output row; `country` only with a users table.
fn write_row(j: &Joined<'_>, users: Option<&Table>, out: &mut Vec<u8>) {
    let user = j
        .left
        .and_then(|l| serde_json::from_slice::<Order<'_>>(l.value).ok())
        .and_then(|o| o.user);
    let country = users.map(|t| {
        user.and_then(|u| t.get(u))
            .and_then(|row| row.get("country"))
            .and_then(|c| c.as_str())
    });
    let amount = j
        .right
        .and_then(|r| serde_json::from_slice::<Payment>(r.value).ok())
        .and_then(|p| p.amount);
    let v = Out {
        order_id: &String::from_utf8_lossy(j.key),
        user,
        amount,
        country,
    };
    serde_json::to_writer(out, &v).expect("writing to a Vec");
}

impl Transform for OrdersPayments {
    fn init(config: &Config) -> Result<Self, String> {
        config.only(&["join", "left", "right", "before", "after", "users"])?;
        let kind = match config.get("join").unwrap_or("inner") {
            "inner" => JoinType::Inner,
            "left-outer" => JoinType::LeftOuter,
            "right-outer" => JoinType::RightOuter,
            "full-outer" => JoinType::FullOuter,
            j => {
                return Err(format!(
                    "config `join`: `{j}` (use inner, left-outer, right-outer or full-outer)"
                ));
            }
        };
        let join = Join::new(
            kind,
            config.get("left").unwrap_or("orders"),
            config.get("right").unwrap_or("payments"),
        )
        .within(
            config.duration_or_zero("before", Duration::ZERO)?,
            config.duration_or_zero("after", Duration::from_secs(60))?,
        )
        .on_state_keys();
        let users = config
            .get("users")
            .map(|p| Table::open(p, "user"))
            .transpose()?;
        Ok(OrdersPayments { join, users })
    }

    fn process(&mut self, r: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
        self.refresh();
        let users = self.users.as_ref();
        self.join
            .process_with(r, out, &|j, o| write_row(j, users, o))
    }

    fn process_batch(&mut self, batch: &Batch<'_>, out: &mut BatchOutput) -> Result<(), String> {
        self.refresh();
        let users = self.users.as_ref();
        self.join
            .process_batch_with(batch, out, &|j, o| write_row(j, users, o))
    }

    fn on_timer(&mut self, timer: &Timer<'_>, out: &mut Output<'_, '_>) -> Result<(), String> {
        let users = self.users.as_ref();
        if self
            .join
            .on_timer_with(timer, out, &|j, o| write_row(j, users, o))
        {
            Ok(())
        } else {
            Err(format!("unexpected timer at {}", timer.time))
        }
    }
}

impl OrdersPayments {
    /// Reload the users table when its file changed; a table that cannot
    /// be read keeps its last good contents, and the failure is logged and
    /// counted.
    fn refresh(&mut self) {
        if let Some(t) = &mut self.users
            && let Err(e) = t.refresh()
        {
            host::warn(&format!("{e}; keeping the table as last loaded"));
            host::counter_add("lookup_reload_failures", 1);
        }
    }
}

weir_guest::export!(OrdersPayments);

#[cfg(test)]
mod tests {
    use super::*;
    use weir_guest::testing::{self, fire_timers, init, run};

    fn rec(v: &'static str, ts: i64) -> Record<'static> {
        Record::new(v.as_bytes()).with_timestamp(ts)
    }

    #[test]
    fn orders_meet_their_payments_and_users_their_countries() {
        testing::reset_state();
        let dir = std::env::temp_dir().join(format!("orders-payments-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let users = dir.join("users.csv");
        std::fs::write(&users, "user,country\nu1,FR\n").unwrap();
        let mut t: OrdersPayments =
            init(&[("join", "left-outer"), ("users", users.to_str().unwrap())]).unwrap();
        testing::set_source(Some("orders"));
        testing::set_state_keys(Some(&[b"o1", b"o2"]));
        let orders = [
            rec(r#"{"order_id":"o1","user":"u1","ts":0}"#, 0),
            rec(r#"{"order_id":"o2","user":"u2","ts":5}"#, 5),
        ];
        assert!(run(&mut t, &orders).unwrap().emitted.is_empty());
        testing::set_source(Some("payments"));
        testing::set_state_keys(Some(&[b"o1"]));
        let pays = [rec(
            r#"{"order_id":"o1","amount":7,"pay_ts":30000}"#,
            30_000,
        )];
        let out = run(&mut t, &pays).unwrap();
        assert_eq!(
            out.values(),
            [r#"{"order_id":"o1","user":"u1","amount":7,"country":"FR"}"#]
        );
        testing::set_source(None);
        testing::set_state_keys(None);
        testing::set_watermark(Some(60_006));
        let out = fire_timers(&mut t).unwrap();
        assert_eq!(
            out.values(),
            [r#"{"order_id":"o2","user":"u2","amount":null,"country":null}"#]
        );
        assert!(init::<OrdersPayments>(&[("join", "cross")]).is_err());
    }
}
