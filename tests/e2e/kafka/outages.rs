//! Broker outages: the broker is down when the pipeline starts, and again in
//! the middle of a run. The pipeline retries with backoff, says so in its
//! log, and once the broker is back the output is exactly once.

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::exactly_once::Pipeline;
use super::{produce_numbers, start_broker, stop_broker};

pub(crate) fn wait_for(
    p: &Pipeline,
    want: usize,
    child: &mut std::process::Child,
    log: &std::path::Path,
) {
    // weir's log, and the broker's beside it (the outages are the broker's).
    let tail = || {
        let end = |f: &std::path::Path| {
            let s = std::fs::read_to_string(f).unwrap_or_default();
            s[s.floor_char_boundary(s.len().saturating_sub(3000))..].to_string()
        };
        let broker = log.with_file_name("broker.log");
        format!("{}\n--- broker.log ---\n{}", end(log), end(&broker))
    };
    let started = Instant::now();
    loop {
        assert!(
            child.try_wait().unwrap().is_none(),
            "weir exited early: {}",
            tail()
        );
        if p.output().len() >= want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "output never reached {want} records: {}",
            tail()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The pipeline process, killed if the test fails before it stops it (a
/// leftover `weir run` would go on retrying its broker for ever).
pub(crate) struct Running(pub(crate) std::process::Child);

impl Running {
    /// `p` running, its stderr in `log`.
    pub(crate) fn start(p: &Pipeline, log: &std::path::Path) -> Running {
        Running(
            p.command()
                .stderr(Stdio::from(std::fs::File::create(log).unwrap()))
                .spawn()
                .unwrap(),
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn survives_outages(continuous: bool) {
    let dir = tempfile::tempdir().unwrap();
    let bootstrap = start_broker(dir.path(), 0);
    // Restarts keep the address the pipeline knows: the same port, retried
    // until the stopped broker has let go of it (with port 0 the script
    // takes another port when the old one is not free yet).
    let port: u16 = bootstrap.rsplit(':').next().unwrap().parse().unwrap();
    let mut p = Pipeline::on(&bootstrap, 300, 100, continuous, "");
    // Both run until stopped; micro-batch on a processing-time trigger.
    if !continuous {
        p.set_trigger("[trigger]\ntype = \"processing-time\"\ninterval = \"200ms\"");
    }
    p.continuous_forever();
    stop_broker(dir.path());

    let log = dir.path().join("weir.log");
    let mut running = Running::start(&p, &log);
    let child = &mut running.0;
    let started = Instant::now();
    loop {
        assert!(child.try_wait().unwrap().is_none(), "weir gave up at once");
        let said = std::fs::read_to_string(&log).unwrap();
        if said.contains("retrying in") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "no retry status: {said}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    start_broker(dir.path(), port);
    wait_for(&p, 300, child, &log);

    // Down again mid-run, then more input once it is back.
    stop_broker(dir.path());
    std::thread::sleep(Duration::from_secs(3));
    start_broker(dir.path(), port);
    produce_numbers(&bootstrap, &p.input, 300, 300);
    p.n = 600;
    wait_for(&p, 600, child, &log);
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
    p.check("after two outages");
    stop_broker(dir.path());
}

#[test]
fn micro_batch_survives_a_broker_down_at_start_and_mid_run() {
    survives_outages(false);
}

#[test]
fn continuous_survives_a_broker_down_at_start_and_mid_run() {
    survives_outages(true);
}
