//! Deduplication by key with a time-to-live: the first record of each key
//! passes, repeats within `ttl` of it are dropped. Seen keys live in
//! checkpointed keyed state and expire after `ttl`, so state stays bounded
//! and a restart forgets nothing.
//!
//! Config: `key-field` (JSON field, default "id"; records without it are
//! bad records), `ttl` (default "1h"), `time` ("event": the record's event
//! time, expiring as the watermark passes, the default; or "processing").

use std::time::Duration;

use weir_guest::state::{TimeDomain, Timer};
use weir_guest::ttl::TtlState;
use weir_guest::{Config, Output, Record, RecordError, Transform, json};

pub struct Dedup {
    seen: TtlState,
    field: String,
}

impl Transform for Dedup {
    fn init(config: &Config) -> Result<Self, String> {
        config.only(&["key-field", "ttl", "time"])?;
        let ttl = config.duration("ttl", Duration::from_secs(3600))?;
        let domain = match config.get("time").unwrap_or("event") {
            "event" => TimeDomain::EventTime,
            "processing" => TimeDomain::ProcessingTime,
            t => {
                return Err(format!(
                    "config `time`: `{t}` (use \"event\" or \"processing\")"
                ));
            }
        };
        Ok(Dedup {
            seen: TtlState::new("seen", ttl, domain),
            field: config.get("key-field").unwrap_or("id").to_string(),
        })
    }

    fn process(
        &mut self,
        record: &Record<'_>,
        out: &mut Output<'_, '_>,
    ) -> Result<(), RecordError> {
        let key = json::field(record.value(), &self.field)?.to_key();
        let now = self.seen.now(record);
        if self.seen.get(&key, now).is_none() {
            self.seen.put(&key, &[], now);
            out.forward();
        }
        Ok(())
    }

    fn on_timer(&mut self, timer: &Timer<'_>, _: &mut Output<'_, '_>) -> Result<(), String> {
        if self.seen.on_timer(timer) {
            Ok(())
        } else {
            Err(format!("unexpected timer at {}", timer.time))
        }
    }
}

weir_guest::export!(Dedup);

#[cfg(test)]
mod tests {
    use super::*;
    use weir_guest::testing::{self, fire_timers, init, run};

    #[test]
    fn repeats_within_the_ttl_are_dropped_and_keys_expire() {
        testing::reset_state();
        let mut t: Dedup = init(&[("ttl", "10ms")]).unwrap();
        let data = [(1, 0), (2, 1), (1, 5), (1, 12), (3, 13)];
        let values: Vec<String> = data
            .iter()
            .map(|(id, ts)| format!(r#"{{"id":{id},"ts":{ts}}}"#))
            .collect();
        let recs: Vec<_> = values
            .iter()
            .zip(data)
            .map(|(v, (_, ts))| Record::new(v.as_bytes()).with_timestamp(ts))
            .collect();
        let out = run(&mut t, &recs).unwrap();
        let ids: Vec<u32> = out.emitted.iter().map(|e| e.origin).collect();
        assert_eq!(ids, vec![0, 1, 3, 4], "id 1 again at 12 is past its ttl");
        testing::set_watermark(Some(100));
        fire_timers(&mut t).unwrap();
        assert_eq!(testing::state_len(), 0, "expired keys leave state");
        assert!(init::<Dedup>(&[("time", "wall")]).is_err());
    }
}
