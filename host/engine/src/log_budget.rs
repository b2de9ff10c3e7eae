//! Log lines on a budget: a guest or a stream of bad records can produce
//! millions of lines a second, and a log that floods is a log nobody reads
//! (and a disk that fills). Each log site admits a few lines per second; the
//! rest are counted, and the count is reported when the next second opens.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One log site's budget: `per_second` lines per one-second window.
#[derive(Debug)]
pub struct LogBudget {
    per_second: u32,
    window_start: Option<Instant>,
    used: u32,
    suppressed: u64,
}

/// What the budget says about one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// Log this line.
    pub admit: bool,
    /// Lines suppressed in the window that just closed: report them first.
    pub suppressed_before: u64,
}

impl LogBudget {
    pub const fn new(per_second: u32) -> Self {
        LogBudget {
            per_second,
            window_start: None,
            used: 0,
            suppressed: 0,
        }
    }

    pub fn admit_at(&mut self, now: Instant) -> Admission {
        let mut suppressed_before = 0;
        let fresh = self
            .window_start
            .is_none_or(|s| now.duration_since(s) >= Duration::from_secs(1));
        if fresh {
            suppressed_before = std::mem::take(&mut self.suppressed);
            self.window_start = Some(now);
            self.used = 0;
        }
        let admit = self.used < self.per_second;
        if admit {
            self.used += 1;
        } else {
            self.suppressed += 1;
        }
        Admission {
            admit,
            suppressed_before,
        }
    }

    pub fn admit(&mut self) -> Admission {
        self.admit_at(Instant::now())
    }
}

/// A budget shared by the threads logging at one site (a `static`).
pub struct SharedLogBudget(Mutex<LogBudget>);

impl SharedLogBudget {
    pub const fn new(per_second: u32) -> Self {
        SharedLogBudget(Mutex::new(LogBudget::new(per_second)))
    }

    pub fn admit(&self) -> Admission {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).admit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_over_the_budget_are_counted_and_reported_next_second() {
        let mut b = LogBudget::new(2);
        let t0 = Instant::now();
        let admitted: Vec<bool> = (0..5).map(|_| b.admit_at(t0).admit).collect();
        assert_eq!(admitted, vec![true, true, false, false, false]);
        let next = b.admit_at(t0 + Duration::from_millis(1001));
        assert_eq!(
            next,
            Admission {
                admit: true,
                suppressed_before: 3
            }
        );
        assert_eq!(
            b.admit_at(t0 + Duration::from_millis(2500))
                .suppressed_before,
            0
        );
    }
}
