"""Keyed state, timers and the batch's clocks, for stateful transforms.

A transform that imports this module is built stateful by ``weir build``
(world ``full-transformer``): the host routes every record to a state
partition by the pipeline's ``[state] key-field`` (or record key), so a
key's records always meet the same state, checkpointed with every batch or
epoch and restored exactly after a crash. Natively (tests) state and timers
live in dictionaries; ``weir.testing`` sets the clocks and fires timers.
"""

from typing import Any, Dict

try:  # inside a component built stateful
    from wit_world.imports import context as _context  # type: ignore[import-not-found, unused-ignore]
    from wit_world.imports import state as _state  # type: ignore[import-not-found, unused-ignore]
    from wit_world.imports import timers as _timers  # type: ignore[import-not-found, unused-ignore]
    from wit_world.imports.types import TimeDomain as _Domain  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # natively
    _state = _timers = _context = _Domain = None

EVENT_TIME = "event-time"
PROCESSING_TIME = "processing-time"

# Native stand-ins.
native: Dict[str, Any] = {
    "state": {},
    "timers": set(),
    "watermark": None,
    "processing_time": 0,
    "output_mode": "append",
    "event_time": True,
    "source": None,
}


def _domain(d):
    if d not in (EVENT_TIME, PROCESSING_TIME):
        raise ValueError(f"a time domain is {EVENT_TIME!r} or {PROCESSING_TIME!r}, not {d!r}")
    if _Domain is None:
        return d
    return _Domain.EVENT_TIME if d == EVENT_TIME else _Domain.PROCESSING_TIME


def get(key):
    """The value (bytes) stored under ``key`` (bytes), or None."""
    if _state is None:
        return native["state"].get(bytes(key))
    return _state.get(bytes(key))


def put(key, value):
    """Store ``value`` under ``key`` (both bytes)."""
    if _state is None:
        native["state"][bytes(key)] = bytes(value)
    else:
        _state.put(bytes(key), bytes(value))


def delete(key):
    if _state is None:
        native["state"].pop(bytes(key), None)
    else:
        _state.delete(bytes(key))


def prefix(p, batch=256):
    """(key, value) pairs whose key starts with ``p``, in key order."""
    p = bytes(p)
    if _state is None:
        yield from sorted((k, v) for k, v in native["state"].items() if k.startswith(p))
        return
    after = None
    while True:
        entries = _state.scan_prefix(p, after, batch)
        for e in entries:
            yield e.key, e.value
        if len(entries) < batch:
            return
        after = entries[-1].key


def scan(start, end=None, batch=256):
    """(key, value) pairs with ``start <= key < end`` (``end`` None: no
    upper bound), in key order."""
    start = bytes(start)
    end = None if end is None else bytes(end)
    if _state is None:
        yield from sorted(
            (k, v) for k, v in native["state"].items() if k >= start and (end is None or k < end)
        )
        return
    while True:
        entries = _state.scan(start, end, batch)
        for e in entries:
            yield e.key, e.value
        if len(entries) < batch:
            return
        start = entries[-1].key + b"\x00"


def register_timer(domain, key, at):
    """Call the ``@weir.on_timer`` function with ``key`` once ``domain``'s
    clock reaches ``at`` (ms); registering the same timer twice keeps one."""
    if _timers is None:
        _domain(domain)
        native["timers"].add((domain, int(at), bytes(key)))
    else:
        _timers.register(_domain(domain), bytes(key), int(at))


def delete_timer(domain, key, at):
    if _timers is None:
        native["timers"].discard((domain, int(at), bytes(key)))
    else:
        _timers.delete(_domain(domain), bytes(key), int(at))


def watermark():
    """The batch's event-time watermark (ms), or None before any event time."""
    return native["watermark"] if _context is None else _context.watermark()


def processing_time():
    """The batch's processing time (ms), the same when a batch is re-run."""
    return native["processing_time"] if _context is None else _context.processing_time()


def output_mode():
    """The pipeline's ``output-mode``: "append", "update" or "complete"."""
    if _context is None:
        return native["output_mode"]
    return _context.query_output_mode().name.lower()


def event_time():
    """Whether the pipeline has an ``[event-time]`` section."""
    return native["event_time"] if _context is None else _context.event_time()


def source():
    """The name of the source whose records the current call holds (its
    ``[[source]] name``, or ``source-<index>``); None while timers fire."""
    return native["source"] if _context is None else _context.source()


class Timer:
    """A fired timer: its ``key`` (bytes), ``time`` (ms) and ``domain``."""

    __slots__ = ("key", "time", "domain")

    def __init__(self, key, time, domain):
        self.key, self.time, self.domain = key, time, domain
