//! One thread for every parked pipeline's deadline (a processing-time
//! trigger's next interval, a restart's backoff, the backstop look of a
//! pipeline that waits for data), so a parked pipeline holds no thread and
//! costs nothing until its deadline or its data comes.
//!
//! Each waiter keeps at most one entry in the heap: a later deadline asked
//! for while an earlier entry is armed waits for that entry to fire and is
//! re-armed then, so a pipeline that parks and wakes a thousand times a
//! minute still has one entry.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Instant;

/// A waiter's deadline state, kept inside the waiter.
#[derive(Default)]
pub(super) struct Deadline {
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    /// When the waiter wants waking, if it does.
    wanted: Option<Instant>,
    /// The time of its entry in the heap, if it has one.
    armed: Option<Instant>,
}

/// Something a deadline wakes.
pub(super) trait Waiter: Send + Sync + 'static {
    fn deadline(&self) -> &Deadline;
    /// Its deadline came.
    fn due(self: Arc<Self>);
}

struct Entry {
    at: Instant,
    seq: u64,
    waiter: Weak<dyn Waiter>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct Heap {
    entries: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

struct Deadlines {
    heap: Mutex<Heap>,
    changed: Condvar,
}

fn deadlines() -> &'static Deadlines {
    static D: OnceLock<&'static Deadlines> = OnceLock::new();
    D.get_or_init(|| {
        let d: &'static Deadlines = Box::leak(Box::new(Deadlines {
            heap: Mutex::new(Heap::default()),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("weir-deadlines".into())
            .spawn(move || d.run())
            .expect("the deadline thread starts");
        d
    })
}

/// Start the deadline thread now, from an unconfined thread (threads it
/// would otherwise be started from may be fenced).
pub(super) fn start() {
    deadlines();
}

/// Wake `waiter` at `at` (unless [`clear`]ed before).
pub(super) fn wake_at(waiter: &Arc<impl Waiter>, at: Instant) {
    let mut slot = waiter
        .deadline()
        .slot
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    slot.wanted = Some(at);
    if slot.armed.is_some_and(|armed| armed <= at) {
        return;
    }
    slot.armed = Some(at);
    let weak: Weak<dyn Waiter> = Arc::downgrade(waiter) as Weak<dyn Waiter>;
    deadlines().push(at, weak);
}

/// The waiter runs now: it no longer wants the deadline it asked for.
pub(super) fn clear(waiter: &impl Waiter) {
    waiter
        .deadline()
        .slot
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .wanted = None;
}

impl Deadlines {
    fn push(&self, at: Instant, waiter: Weak<dyn Waiter>) {
        let mut heap = self.heap.lock().unwrap_or_else(|e| e.into_inner());
        heap.seq += 1;
        let seq = heap.seq;
        let first = heap.entries.peek().is_none_or(|Reverse(e)| at < e.at);
        heap.entries.push(Reverse(Entry { at, seq, waiter }));
        if first {
            self.changed.notify_one();
        }
    }

    fn run(&self) {
        let mut heap = self.heap.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let now = Instant::now();
            let next = heap.entries.peek().map(|Reverse(e)| e.at);
            match next {
                None => {
                    heap = self.changed.wait(heap).unwrap_or_else(|e| e.into_inner());
                }
                Some(at) if at > now => {
                    heap = self
                        .changed
                        .wait_timeout(heap, at - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                Some(_) => {
                    let Reverse(due) = heap.entries.pop().expect("peeked");
                    drop(heap);
                    if let Some(w) = due.waiter.upgrade() {
                        fire(w, due.at);
                    }
                    heap = self.heap.lock().unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }
}

/// An entry for `at` came due: wake the waiter if it still wants waking
/// by now, or re-arm for the later time it wants.
fn fire(w: Arc<dyn Waiter>, at: Instant) {
    let rearm = {
        let mut slot = w.deadline().slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.armed != Some(at) {
            return;
        }
        slot.armed = None;
        match slot.wanted {
            Some(wanted) if wanted > Instant::now() => {
                slot.armed = Some(wanted);
                Some(wanted)
            }
            Some(_) => {
                slot.wanted = None;
                None
            }
            None => return,
        }
    };
    match rearm {
        Some(wanted) => deadlines().push(wanted, Arc::downgrade(&w)),
        None => w.due(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    struct Probe {
        deadline: Deadline,
        woke: Mutex<mpsc::Sender<Instant>>,
    }
    impl Waiter for Probe {
        fn deadline(&self) -> &Deadline {
            &self.deadline
        }
        fn due(self: Arc<Self>) {
            let _ = self.woke.lock().unwrap().send(Instant::now());
        }
    }

    fn probe() -> (Arc<Probe>, mpsc::Receiver<Instant>) {
        let (tx, rx) = mpsc::channel();
        let p = Arc::new(Probe {
            deadline: Deadline::default(),
            woke: Mutex::new(tx),
        });
        (p, rx)
    }

    #[test]
    fn a_waiter_wakes_at_its_latest_wanted_time_once() {
        let (p, woke) = probe();
        let start = Instant::now();
        wake_at(&p, start + Duration::from_millis(30));
        // Asked again for later: the earlier entry re-arms, no second wake.
        wake_at(&p, start + Duration::from_millis(120));
        let at = woke.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(at >= start + Duration::from_millis(120), "{:?}", at - start);
        assert!(woke.recv_timeout(Duration::from_millis(200)).is_err());
    }

    #[test]
    fn a_cleared_deadline_does_not_wake_and_an_earlier_one_wins() {
        let (p, woke) = probe();
        let start = Instant::now();
        wake_at(&p, start + Duration::from_millis(40));
        clear(&*p);
        assert!(woke.recv_timeout(Duration::from_millis(200)).is_err());
        wake_at(&p, start + Duration::from_secs(30));
        wake_at(&p, start + Duration::from_millis(250));
        let at = woke.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(at < start + Duration::from_secs(5));
    }

    #[test]
    fn a_dropped_waiter_is_not_woken() {
        let (p, woke) = probe();
        wake_at(&p, Instant::now() + Duration::from_millis(20));
        drop(p);
        assert!(woke.recv_timeout(Duration::from_millis(200)).is_err());
    }
}
