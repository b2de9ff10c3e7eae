//! A `weir serve` process for the service's tests and benchmarks.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

/// Lines of the server's log kept for [`Serve::log_tail`].
const LOG_LINES: usize = 200;

/// The newest lines of a server's log.
type LogTail = Arc<Mutex<VecDeque<String>>>;

fn keep(log: &LogTail, line: String) {
    let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
    if l.len() == LOG_LINES {
        l.pop_front();
    }
    l.push_back(line);
}

/// `weir serve` on a free local port, killed (SIGKILL) when dropped.
pub struct Serve {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The admin token.
    pub admin: String,
    log: LogTail,
}

impl Serve {
    /// Start it over `data` with `extra` arguments. `admin`: the token of a
    /// data directory started before, which the server does not print again.
    pub fn spawn(data: &Path, extra: &[&str], admin: Option<&str>) -> Serve {
        Self::spawn_with(data, extra, admin, &[], None)
    }

    /// [`Self::spawn`] with extra environment variables, in `cwd` (the
    /// test's own when `None`).
    pub fn spawn_with(
        data: &Path,
        extra: &[&str],
        admin: Option<&str>,
        env: &[(&str, &str)],
        cwd: Option<&Path>,
    ) -> Serve {
        let mut cmd = crate::weir();
        cmd.envs(env.iter().copied());
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        let mut child = cmd
            .arg("serve")
            .arg("--data")
            .arg(data)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let admin = match admin {
            Some(a) => a.to_string(),
            None => {
                let mut line = String::new();
                BufReader::new(child.stdout.take().unwrap())
                    .read_line(&mut line)
                    .unwrap();
                line.trim().to_string()
            }
        };
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = LogTail::default();
        let base = loop {
            let line = lines.next().unwrap_or_else(|| {
                let seen = Vec::from(log.lock().unwrap_or_else(|e| e.into_inner()).clone());
                panic!("serve exited before listening:\n{}", seen.join("\n"))
            });
            let line = line.unwrap();
            if let Some(addr) = line.strip_prefix("weir serve: listening on ") {
                break addr.trim().to_string();
            }
            keep(&log, line);
        };
        // Keep draining the server's log so it never blocks on it, keeping
        // its newest lines.
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in lines {
                match line {
                    Ok(line) => keep(&kept, line),
                    // A line that is not UTF-8: skipped, the rest still read.
                    Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {}
                    Err(_) => break,
                }
            }
        });
        Serve {
            child,
            base,
            admin,
            log,
        }
    }

    /// The newest lines the server logged (at most 200).
    pub fn log_tail(&self) -> String {
        let l = self.log.lock().unwrap_or_else(|e| e.into_inner());
        Vec::from(l.clone()).join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM it and wait for it to exit, as an orchestrator stops a
    /// service: its exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        // SAFETY: a plain signal to our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        self.child.wait().unwrap()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
