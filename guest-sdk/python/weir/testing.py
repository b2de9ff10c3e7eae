"""Run a transform natively (``pytest``), through the same batch loop and
column rules the component uses.

    from weir import testing
    import app

    def test_shout():
        assert testing.values(["a", "b"]) == ["A", "B"]
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import state
from ._host import native_metrics
from ._run import run_batch, run_init, run_timers


@dataclass
class Header:
    name: str
    value: bytes


@dataclass
class In:
    """One input record for a test; ``value=None`` is a tombstone."""

    value: object = b""
    key: object = None
    headers: list = field(default_factory=list)
    timestamp: int = 0


@dataclass
class Out:
    """One output record."""

    value: Optional[bytes]
    key: Optional[bytes]
    headers: list
    timestamp: int
    output: Optional[str]
    origin: int


def _b(v):
    return v.encode() if isinstance(v, str) else v


class Batch:
    """A batch in the contract's columnar fields, built from ``In``s, at
    offsets ``first_offset`` on."""

    def __init__(self, records, partition=0, first_offset=0):
        self.partition = partition
        self.values, self.value_ends, self.has_value = b"", [], []
        self.keys, self.key_ends, self.has_key = b"", [], []
        self.headers, self.header_ends = [], []
        self.timestamps, self.offsets = [], []
        values, keys = bytearray(), bytearray()
        for i, r in enumerate(records):
            r = r if isinstance(r, In) else In(r)
            value, key = _b(r.value), _b(r.key)
            values += value or b""
            self.value_ends.append(len(values))
            self.has_value.append(value is not None)
            keys += key or b""
            self.key_ends.append(len(keys))
            self.has_key.append(key is not None)
            self.headers += [Header(n, _b(v)) for n, v in r.headers]
            self.header_ends.append(len(self.headers))
            self.timestamps.append(r.timestamp)
            self.offsets.append(first_offset + i)
        self.values, self.keys = bytes(values), bytes(keys)
        # Optional columns are empty when every record has the default.
        if all(self.has_value):
            self.has_value = []
        if not any(self.has_key):
            self.key_ends, self.has_key = [], []
        if not self.headers:
            self.header_ends = []


def run(
    records: Sequence[Any], config: Sequence[Tuple[str, str]] = (), source: Optional[str] = None, first_offset: int = 0
) -> Tuple[List["Out"], List[Tuple[int, str]]]:
    """``(outputs, rejected)`` for a batch of ``records`` (``In``s, or
    plain values), after ``init`` with ``config`` pairs, as the host runs a
    batch of source ``source`` (``weir.state.source()``) at offsets
    ``first_offset`` on."""
    run_init(list(config))
    state.native["source"] = source
    b = Batch(records, first_offset=first_offset)
    try:
        return _outputs(b, run_batch(b))
    finally:
        state.native["source"] = None


def reset_state(output_mode: str = "append", event_time: bool = True) -> None:
    """Forget native state and timers, reset the clocks, and set the
    pipeline's output mode and whether it has event time."""
    state.native.update(
        state={},
        timers=set(),
        watermark=None,
        processing_time=0,
        output_mode=output_mode,
        event_time=event_time,
        source=None,
    )


def fire_timers(
    watermark: Optional[int] = None, processing_time: Optional[int] = None
) -> Tuple[List["Out"], List[Tuple[int, str]]]:
    """Advance the native clocks, then fire the timers they reach, in time
    order, through the ``@weir.on_timer`` function: ``(outputs, rejected)``
    (outputs' ``origin`` indexes the fired timers)."""
    n = state.native
    if watermark is not None:
        n["watermark"] = watermark
    if processing_time is not None:
        n["processing_time"] = processing_time
    due = sorted(
        (t for t in n["timers"] if t[1] <= (n["watermark"] if t[0] == state.EVENT_TIME else n["processing_time"])),
        key=lambda t: (t[1], t[2]),
    )
    n["timers"] -= set(due)
    keys, ends = b"", []
    for _, _, k in due:
        keys += k
        ends.append(len(keys))
    times = [t[1] for t in due]
    b = Batch([In(None, key=k, timestamp=t) for _, t, k in due])
    return _outputs(b, run_timers(keys, ends, times, [t[0] for t in due]))


def _outputs(b, cols):
    outs = [
        Out(
            value=value,
            key=key,
            headers=list(headers),
            timestamp=b.timestamps[origin] if ts is None else ts,
            output=output,
            origin=origin,
        )
        for origin, output, key, value, headers, ts in cols.rows()
    ]
    return outs, cols.rejected


def values(records: Sequence[Any], config: Sequence[Tuple[str, str]] = ()) -> List[Optional[str]]:
    """The output values as text (``None`` for tombstones)."""
    outs, _ = run(records, config)
    return [None if o.value is None else o.value.decode() for o in outs]


def metrics() -> Dict[str, Dict[str, Any]]:
    """Counters and gauges reported so far: ``{"counters", "gauges"}``."""
    return native_metrics
