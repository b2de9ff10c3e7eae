#!/usr/bin/env python3
"""Group a `perf report` of `weir run` by stage: the self time of every
sampled function, attributed to the part of the pipeline its code belongs
to (by crate and module path, or the JIT-compiled guest). Reads
`perf report --no-children --sort dso,sym --stdio -q` on stdin; prints a
Markdown table, largest stage first.

Stages are named by code, not by call path: `malloc` called by the
exchange counts under "memory", and the kernel's work under "kernel"
(reads, writes, fsync, page faults)."""
import re
import sys

STAGES = [
    ("guest code (wasm)", r"^(perf-\d+\.map|\[JIT\]|JIT|\[unknown\])|\bwasm\[\d+\]|wasm-function"),
    ("guest boundary (wasmtime, lifting, host calls)", r"\bwasmtime|\bweir_runtime::|cranelift|component::"),
    ("read (file source)", r"\bweir_connectors::file_source|\bweir_log::"),
    ("Kafka consume (librdkafka fetch, weir's source)",
     r"rd_kafka_(fetch|consume|msgset_reader|q_|op_|toppar_fetch)|kafka::librdkafka::(source|consumer|continuous|offsets)"),
    ("Kafka produce and transactions (librdkafka, weir's sink)",
     r"rd_kafka_(produce|msg|msgset_writer|txn|idemp|buf)|kafka::librdkafka::sink|crc32c"),
    ("librdkafka other", r"rd_kafka|rd_"),
    ("key exchange and event time (host JSON)", r"\bweir_engine::exchange|key_field|serde_json|event_time|murmur"),
    ("state store (keyed state, timers)", r"\bweir_engine::state::(keyed|map|timers|run)|BTreeMap|btree"),
    ("state files (snapshots, deltas)", r"\bweir_engine::state::files|crc32"),
    ("sink (file sink)", r"\bweir_connectors::file_sink"),
    ("commit (write-ahead, commit log, progress)", r"\bweir_engine::(commit|wal|checkpoint|progress)"),
    ("engine (batches, tasks, guard)", r"\bweir_engine::"),
    ("memory (malloc, free, copies)", r"malloc|free|realloc|memmove|memcpy|memset|_int_|cfree|tcache"),
    ("kernel (I/O, fsync, page faults, scheduling)", r"\[k\]"),
]

total = 0.0
by_stage = {name: 0.0 for name, _ in STAGES}
other = 0.0
top_other = {}
top_guest = {}
for line in sys.stdin:
    # A JIT map's dso has spaces ("[JIT] tid 123"): everything up to the
    # [.] or [k] marker is the dso.
    m = re.match(r"\s*([\d.]+)%\s+(.*?)\s+(\[[.k]\])\s+(.*)", line)
    if not m:
        if re.match(r"\s*[\d.]+%", line):
            print(f"perf-stages: unparsed: {line.strip()}", file=sys.stderr)
        continue
    pct, dso, kind, sym = float(m[1]), m[2], m[3], m[4].strip()
    total += pct
    text = f"{dso} {kind} {sym}"
    for name, pattern in STAGES:
        if re.search(pattern, text):
            by_stage[name] += pct
            if name == STAGES[0][0]:
                top_guest[sym] = top_guest.get(sym, 0.0) + pct
            break
    else:
        other += pct
        top_other[sym] = top_other.get(sym, 0.0) + pct

print("| stage (by the code that ran) | share of CPU samples |")
print("|---|---|")
for name, pct in sorted(by_stage.items(), key=lambda kv: -kv[1]):
    if pct >= 0.05:
        print(f"| {name} | {pct:.1f}% |")
largest = ", ".join(f"{s[:40]} {p:.1f}%" for s, p in sorted(top_other.items(), key=lambda kv: -kv[1])[:3])
print(f"| other ({largest}) | {other:.1f}% |")
print(f"\n({total:.1f}% of samples classified)")
if top_guest:
    print("\nguest code's largest functions:")
    for sym, pct in sorted(top_guest.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {pct:5.1f}%  {sym[:110]}")
