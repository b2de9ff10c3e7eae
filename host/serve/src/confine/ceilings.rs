//! Ceilings on the numbers a tenant's pipeline file sets. `weir run` trusts
//! its user; the service does not: a rate source with four billion
//! partitions, a call timeout of a hundred thousand days or a zero idle
//! poll would each take the host from every other tenant. Each number is
//! refused above its ceiling (400, naming the key and the ceiling).

use std::time::Duration;

use weir_engine::Trigger;
use weir_pipeline::spec::{Mode, Pipeline, SinkSpec, SourceSpec};

/// Partitions of a rate source or of a log topic a sink creates.
pub const MAX_PARTITIONS: u64 = 256;
/// Rows per second of a rate source.
pub const MAX_ROWS_PER_SECOND: u64 = 10_000_000;
/// Records (offsets) a source may plan into one batch.
pub const MAX_RECORDS_PER_TRIGGER: u64 = 10_000_000;
/// Files a file source may plan into one batch.
pub const MAX_FILES_PER_TRIGGER: u64 = 100_000;
/// Longest guest call: a stop interrupts a guest anyway, but a deadline is
/// how a looping guest is found and isolated.
pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest guest linear memory of one instance (the tenant's max-memory
/// bounds all of them together).
pub const MAX_GUEST_MEMORY: u64 = 4 << 30;
/// Largest keyed state of one state partition.
pub const MAX_STATE: u64 = 16 << 30;
/// Largest input record handed to a guest.
pub const MAX_RECORD_SIZE: u64 = 64 << 20;
/// Most output bytes of one call.
pub const MAX_OUTPUT_BYTES: u64 = 1 << 30;
/// Most outputs of one input record.
pub const MAX_OUTPUTS_PER_RECORD: u64 = 100_000;
/// The smallest log segment a tenant's sink may roll at: each segment is
/// two files, so small ones would let a tenant spend the host's inodes.
pub const MIN_SEGMENT_SIZE: u64 = 1 << 20;
/// Failures tolerated in a crash window, and the longest window.
pub const MAX_CRASH_LOOP_TRAPS: u64 = 10_000;
pub const MAX_CRASH_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// Fuel of one call (about one unit per wasm instruction).
pub const MAX_FUEL: u64 = 1_000_000_000_000;
/// State partitions of a stateful pipeline.
pub const MAX_STATE_PARTITIONS: u64 = 1024;
/// Shortest idle poll and wake timeout (the default poll is 2 ms, doubled
/// per empty poll), and shortest continuous epoch (each commits to disk):
/// below these a query spins instead of waiting.
pub const MIN_WAIT: Duration = Duration::from_millis(1);
pub const MIN_EPOCH: Duration = Duration::from_millis(10);
/// Longest trigger interval, idle wait or epoch.
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);
/// Entries of `[transform.config]`, and the longest value.
pub const MAX_CONFIG_ENTRIES: u64 = 1024;
pub const MAX_CONFIG_VALUE: u64 = 1 << 20;
/// Sources and sinks of one pipeline.
pub const MAX_SOURCES: u64 = 64;
pub const MAX_SINKS: u64 = 64;
/// Granted sandbox directories and variables.
pub const MAX_SANDBOX_DIRS: u64 = 16;

fn at_most(key: &str, v: u64, ceiling: u64) -> Result<(), String> {
    if v > ceiling {
        return Err(format!(
            "{key} = {v} is above the service's ceiling of {ceiling}"
        ));
    }
    Ok(())
}

fn duration_within(key: &str, v: Duration, min: Duration, max: Duration) -> Result<(), String> {
    if v < min || v > max {
        return Err(format!(
            "{key} = {} is outside the service's range {} to {}",
            humantime::format_duration(v),
            humantime::format_duration(min),
            humantime::format_duration(max)
        ));
    }
    Ok(())
}

/// Every number of `p` under its ceiling; `max_memory` is the tenant's
/// guest memory quota, which also bounds each guest's memory.
pub fn check(p: &Pipeline, max_memory: u64) -> Result<(), String> {
    at_most("the number of sources", p.sources.len() as u64, MAX_SOURCES)?;
    at_most("the number of sinks", p.sinks.len() as u64, MAX_SINKS)?;
    for (i, s) in p.sources.iter().enumerate() {
        let key = |k: &str| format!("source {i}: {k}");
        match s {
            SourceSpec::Log {
                max_records_per_trigger,
                ..
            } => {
                if let Some(n) = max_records_per_trigger {
                    at_most(&key("max-records-per-trigger"), *n, MAX_RECORDS_PER_TRIGGER)?;
                }
            }
            SourceSpec::Files {
                max_files_per_trigger,
                ..
            } => {
                if let Some(n) = max_files_per_trigger {
                    at_most(
                        &key("max-files-per-trigger"),
                        *n as u64,
                        MAX_FILES_PER_TRIGGER,
                    )?;
                }
            }
            SourceSpec::Rate {
                rows_per_second,
                partitions,
                max_records_per_trigger,
            } => {
                at_most(
                    &key("rows-per-second"),
                    *rows_per_second,
                    MAX_ROWS_PER_SECOND,
                )?;
                at_most(&key("partitions"), u64::from(*partitions), MAX_PARTITIONS)?;
                if let Some(n) = max_records_per_trigger {
                    at_most(&key("max-records-per-trigger"), *n, MAX_RECORDS_PER_TRIGGER)?;
                }
            }
            SourceSpec::Kafka(k) => {
                if let Some(n) = k.max_offsets_per_trigger {
                    at_most(&key("max-offsets-per-trigger"), n, MAX_RECORDS_PER_TRIGGER)?;
                }
            }
        }
    }
    for (name, s) in &p.sinks {
        if let SinkSpec::Log {
            partitions,
            segment_bytes,
            ..
        } = s
        {
            let name = name.as_deref().unwrap_or("default");
            at_most(
                &format!("sink.{name}.partitions"),
                u64::from(*partitions),
                MAX_PARTITIONS,
            )?;
            if *segment_bytes < MIN_SEGMENT_SIZE {
                return Err(format!(
                    "sink.{name}.segment-size = {segment_bytes} is below the service's floor of {MIN_SEGMENT_SIZE} bytes"
                ));
            }
        }
    }
    if let Some(w) = &p.window {
        at_most("window.max-state", w.spec.max_state_bytes as u64, MAX_STATE)?;
    }
    if let Some(t) = &p.transform {
        let l = &t.limits;
        let key = |k: &str| format!("transform.limits.{k}");
        duration_within(
            &key("call-timeout"),
            l.call_deadline,
            Duration::from_millis(1),
            MAX_CALL_TIMEOUT,
        )?;
        at_most(
            &key("memory"),
            l.max_memory as u64,
            MAX_GUEST_MEMORY.min(max_memory),
        )?;
        at_most(&key("state"), l.max_state as u64, MAX_STATE)?;
        if let Some(f) = l.fuel {
            at_most(&key("fuel"), f, MAX_FUEL)?;
        }
        let r = &t.record_limits;
        at_most(
            &key("max-record-size"),
            r.max_record_bytes as u64,
            MAX_RECORD_SIZE,
        )?;
        at_most(
            &key("max-output-bytes"),
            r.max_output_bytes as u64,
            MAX_OUTPUT_BYTES,
        )?;
        at_most(
            &key("max-outputs-per-record"),
            r.max_outputs_per_record as u64,
            MAX_OUTPUTS_PER_RECORD,
        )?;
        at_most(
            &key("crash-loop-traps"),
            r.crash_loop_traps as u64,
            MAX_CRASH_LOOP_TRAPS,
        )?;
        duration_within(
            &key("crash-window"),
            r.crash_window,
            Duration::ZERO,
            MAX_CRASH_WINDOW,
        )?;
        at_most(
            "entries of [transform.config]",
            t.config.len() as u64,
            MAX_CONFIG_ENTRIES,
        )?;
        for (k, v) in &t.config {
            at_most(
                &format!("the length of transform.config.{k}"),
                v.len() as u64,
                MAX_CONFIG_VALUE,
            )?;
        }
        at_most(
            "transform.sandbox.dirs entries",
            t.sandbox.dirs.len() as u64,
            MAX_SANDBOX_DIRS,
        )?;
    }
    if let Some(k) = &p.state_key {
        at_most(
            "state.partitions",
            u64::from(k.partitions),
            MAX_STATE_PARTITIONS,
        )?;
    }
    if let Trigger::ProcessingTime(i) = &p.trigger {
        duration_within("trigger.interval", *i, Duration::ZERO, MAX_WAIT)?;
    }
    duration_within("trigger.idle-poll", p.idle.poll, MIN_WAIT, MAX_WAIT)?;
    duration_within("trigger.max-idle-poll", p.idle.max_poll, MIN_WAIT, MAX_WAIT)?;
    duration_within("trigger.wake-timeout", p.idle.wake, MIN_WAIT, MAX_WAIT)?;
    if let Mode::Continuous {
        checkpoint_interval,
    } = p.mode
    {
        duration_within(
            "checkpoint-interval",
            checkpoint_interval,
            MIN_EPOCH,
            MAX_WAIT,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> Pipeline {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "checkpoint = \"c\"\n[[source]]\ntype = \"rate\"\nrows-per-second = 10\n{extra}\n[sink.default]\ntype = \"console\"\n"
        );
        Pipeline::parse(&text, "p.toml", dir.path()).unwrap()
    }

    #[test]
    fn hostile_numbers_are_refused_by_key() {
        check(&parse(""), 1 << 30).unwrap();
        let err = check(&parse("partitions = 4294967295"), 1 << 30).unwrap_err();
        assert!(
            err.contains("source 0: partitions = 4294967295 is above the service's ceiling of 256"),
            "{err}"
        );
        let err = check(
            &parse("[trigger]\ntype = \"processing-time\"\ninterval = \"1s\"\nidle-poll = \"1ns\""),
            1 << 30,
        )
        .unwrap_err();
        assert!(err.contains("trigger.idle-poll"), "{err}");
        let window = |max: &str| {
            parse(&format!(
                "[window]\nsize = \"1s\"\nmax-state = \"{max}\"\n[state]\nkey = \"record-key\"\n[event-time]\ndelay = \"1s\""
            ))
        };
        check(&window("1GiB"), 1 << 30).unwrap();
        let err = check(&window("17GiB"), 1 << 30).unwrap_err();
        assert!(err.contains("window.max-state"), "{err}");
    }

    #[test]
    fn a_tenants_log_segments_are_at_least_a_mebibyte() {
        let with = |size: &str| {
            let dir = tempfile::tempdir().unwrap();
            let text = format!(
                "checkpoint = \"c\"\n[[source]]\ntype = \"rate\"\nrows-per-second = 10\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\nsegment-size = \"{size}\"\n"
            );
            check(
                &Pipeline::parse(&text, "p.toml", dir.path()).unwrap(),
                1 << 30,
            )
        };
        with("1MiB").unwrap();
        let err = with("4KiB").unwrap_err();
        assert!(
            err.contains(
                "sink.default.segment-size = 4096 is below the service's floor of 1048576 bytes"
            ),
            "{err}"
        );
    }
}
