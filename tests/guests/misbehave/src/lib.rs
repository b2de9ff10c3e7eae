//! A guest that misbehaves on command, one behaviour per record value:
//! `panic`, `loop`, `oom`, `recurse` (unbounded recursion: stack overflow),
//! `bomb` (100,000 outputs for one record), `huge-output` (one 16 MiB
//! output), `bad`, `fatal`, `log` (logs and counts), `metric:NAME` (counts
//! under NAME, whatever it holds); any other value passes
//! through. Config `refuse = <msg>` makes init fail; `slow-init`
//! makes init spin forever; `spin-per-record = N` burns N loop iterations on
//! every record (a deliberately slow guest, for backpressure).

use weir_guest::{Config, Output, Record, RecordError, Transform, host};

struct Misbehave {
    spin_per_record: u64,
}

impl Transform for Misbehave {
    fn init(config: &Config) -> Result<Self, String> {
        if let Some(msg) = config.get("refuse") {
            return Err(msg.to_string());
        }
        if config.get("slow-init").is_some() {
            spin();
        }
        let spin_per_record = match config.get("spin-per-record") {
            Some(n) => n
                .parse()
                .map_err(|_| format!("spin-per-record: `{n}` is not a number"))?,
            None => 0,
        };
        Ok(Misbehave { spin_per_record })
    }

    fn process(&mut self, r: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
        let mut x = 0u64;
        for _ in 0..self.spin_per_record {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        match r.value() {
            b"panic" => panic!(
                "guest panicked on purpose at offset {}",
                r.position().offset
            ),
            b"loop" => spin(),
            b"work" => {
                // A fixed amount of CPU work (benchmarks of CPU sharing).
                let mut x = 0x9e37_79b9_7f4a_7c15u64;
                for _ in 0..20_000_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                }
                out.emit(std::hint::black_box(x).to_le_bytes());
                Ok(())
            }
            b"oom" => {
                let mut hog: Vec<Vec<u8>> = Vec::new();
                loop {
                    hog.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hog);
                }
            }
            b"leak" => {
                // A runtime that never frees: 1 MiB kept per record.
                std::mem::forget(std::hint::black_box(vec![1u8; 1 << 20]));
                out.forward();
                Ok(())
            }
            b"recurse" => {
                std::hint::black_box(recurse(1));
                Ok(())
            }
            b"bomb" => {
                for _ in 0..100_000 {
                    out.forward();
                }
                Ok(())
            }
            b"huge-output" => {
                out.emit(vec![b'x'; 16 << 20]);
                Ok(())
            }
            b"bad" => Err(RecordError::bad("this record is bad on purpose")),
            b"fatal" => Err(RecordError::broken("giving up on purpose")),
            b"log" => {
                host::info("log record seen");
                host::counter_add("logged", 1);
                out.forward();
                Ok(())
            }
            v if v.starts_with(b"metric:") => {
                // A metric name chosen by the record (attack tests: names
                // that would forge exposition lines).
                host::counter_add(&String::from_utf8_lossy(&v[7..]), 1);
                out.forward();
                Ok(())
            }
            _ => {
                out.forward();
                Ok(())
            }
        }
    }
}

#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    recurse(depth + 1).wrapping_add(frame[(depth % 64) as usize])
}

fn spin() -> ! {
    let mut x = 0u64;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

weir_guest::export!(Misbehave);
