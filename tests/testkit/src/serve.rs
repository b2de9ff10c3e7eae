//! A `weir serve` process for the service's tests and benchmarks.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

/// `weir serve` on a free local port, killed (SIGKILL) when dropped.
pub struct Serve {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The admin token.
    pub admin: String,
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
        let base = loop {
            let line = lines
                .next()
                .expect("serve exited before listening")
                .unwrap();
            if let Some(addr) = line.strip_prefix("weir serve: listening on ") {
                break addr.trim().to_string();
            }
        };
        // Keep draining the server's log so it never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        Serve { child, base, admin }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
