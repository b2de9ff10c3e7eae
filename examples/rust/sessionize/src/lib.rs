//! Sessionization: groups each user's clicks into sessions (clicks less
//! than `gap` apart, in event time) and emits one summary per session once
//! the watermark closes it.
//!
//! Input: `{"user":"u1","page":"/home","ts":...}`. Config: `gap` (default
//! "30s"), `user-field` (default "user"), `page-field` (default "page").
//! Output: `{"user":"u1","start":..,"end":..,"clicks":3,"pages":["/a","/b"]}`
//! where `end` is the last click plus the gap, and `pages` lists the first
//! ten pages of the session in arrival order.

use std::time::Duration;

use weir_guest::window::{Aggregate, Window, Windowed, WindowedTransform, Windows, json_string};
use weir_guest::{Config, Record, RecordError, json};

/// Pages kept per session summary.
const MAX_PAGES: usize = 10;

/// The session aggregate: click count and the first pages, `\n`-separated.
pub struct Clicks {
    page_field: String,
}

impl Aggregate for Clicks {
    type Acc = (u64, String);

    fn zero(&self) -> Self::Acc {
        (0, String::new())
    }

    fn add(&self, acc: &mut Self::Acc, record: &Record<'_>) -> Result<(), RecordError> {
        let page = json::field(record.value(), &self.page_field)?.to_key();
        let page = String::from_utf8_lossy(&page).replace('\n', " ");
        acc.0 += 1;
        push_page(&mut acc.1, &page);
        Ok(())
    }

    fn merge(&self, into: &mut Self::Acc, other: Self::Acc) {
        into.0 += other.0;
        for p in other.1.split('\n').filter(|p| !p.is_empty()) {
            push_page(&mut into.1, p);
        }
    }

    fn result(&self, user: &[u8], w: Window, acc: &Self::Acc, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"user\":");
        json_string(&String::from_utf8_lossy(user), out);
        out.extend_from_slice(
            format!(
                ",\"start\":{},\"end\":{},\"clicks\":{},\"pages\":[",
                w.start, w.end, acc.0
            )
            .as_bytes(),
        );
        for (i, p) in acc.1.split('\n').filter(|p| !p.is_empty()).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json_string(p, out);
        }
        out.extend_from_slice(b"]}");
    }
}

fn push_page(pages: &mut String, page: &str) {
    if pages.split('\n').filter(|p| !p.is_empty()).count() < MAX_PAGES {
        pages.push_str(page);
        pages.push('\n');
    }
}

pub struct Sessionize;

impl WindowedTransform for Sessionize {
    type Agg = Clicks;

    fn build(config: &Config) -> Result<Windowed<Clicks>, String> {
        config.only(&["gap", "user-field", "page-field"])?;
        let gap = config.duration("gap", Duration::from_secs(30))?;
        let user = config.get("user-field").unwrap_or("user").to_string();
        let page_field = config.get("page-field").unwrap_or("page").to_string();
        Ok(Windowed::session(gap, Clicks { page_field })
            .key_by(move |r| Ok(json::field(r.value(), &user)?.to_key())))
    }
}

weir_guest::export!(Windows<Sessionize>);

#[cfg(test)]
mod tests {
    use super::*;
    use weir_guest::testing::{self, fire_timers, init, run};

    #[test]
    fn clicks_close_to_each_other_form_one_session() {
        testing::reset_state();
        let mut t: Windows<Sessionize> = init(&[("gap", "10ms")]).unwrap();
        let data = [
            ("u1", "/a", 0),
            ("u1", "/b", 8),
            ("u2", "/x", 3),
            ("u1", "/c", 30),
        ];
        let values: Vec<String> = data
            .iter()
            .map(|(u, p, ts)| format!(r#"{{"user":"{u}","page":"{p}","ts":{ts}}}"#))
            .collect();
        let recs: Vec<_> = values
            .iter()
            .zip(data)
            .map(|(v, (_, _, ts))| Record::new(v.as_bytes()).with_timestamp(ts))
            .collect();
        run(&mut t, &recs).unwrap();
        testing::set_watermark(Some(25));
        assert_eq!(
            fire_timers(&mut t).unwrap().values(),
            vec![
                r#"{"user":"u2","start":3,"end":13,"clicks":1,"pages":["/x"]}"#,
                r#"{"user":"u1","start":0,"end":18,"clicks":2,"pages":["/a","/b"]}"#
            ]
        );
    }
}
