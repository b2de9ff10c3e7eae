//! What a process the benches started is using, read from /proc.

/// A process's resident memory, threads and CPU time so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessUsage {
    pub rss_bytes: u64,
    pub threads: u64,
    /// User and system time, in seconds.
    pub cpu_seconds: f64,
}

/// Process `pid`'s usage now (Linux).
pub fn process_usage(pid: u32) -> ProcessUsage {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |k: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 (1-based, from the pid).
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    // SAFETY: a plain sysconf query.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ProcessUsage {
        rss_bytes: field("VmRSS:") * 1024,
        threads: field("Threads:"),
        cpu_seconds: ticks as f64 / hz,
    }
}
