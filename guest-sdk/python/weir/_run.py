"""Running the registered function over a batch or one record. Shared by
the component's exports (``weir._entry``) and ``weir.testing``."""

from . import _register
from ._batch import KEEP, Columns, Output, Record, _as_bytes
from ._columns import run_filter_batch
from ._errors import Broken
from ._errors import reason as _reason


# The windowed aggregation (or join) a @weir.windowed (@weir.joined)
# builder made at init.
_windows = None
BUILT = ("windowed", "joined")


def run_batch(b):
    """The output ``Columns`` of batch ``b``; raises ``Broken``."""
    kind, f = _register.registered()
    n = len(b.value_ends)
    cols = Columns(n)
    out = Output(cols, None)
    if kind in BUILT:
        if _windows is None:
            raise Broken(f"the @weir.{kind} builder did not run: init first")
        _windows.process_batch(b, cols, out)
        return cols
    if kind == "filter_batch":
        run_filter_batch(f, b, cols)
        return cols
    values, ends, present = b.values, b.value_ends, b.has_value
    plain = not b.key_ends and not b.header_ends and not present
    if plain and kind == "filter":
        _plain_filter(f, b, cols)
        return cols
    # Only a flat_map can have emitted part of a record's output before it
    # fails; the other kinds emit after their function returns.
    flat = kind == "flat_map"
    start = 0
    for i in range(n):
        end = ends[i]
        value = values[start:end] if not present or present[i] else None
        start = end
        record = Record(value, i, b)
        if flat:
            mark = cols.mark()
        try:
            if kind == "map":
                if value is None:
                    out.record = record
                    out.forward()
                    continue
                v = f(record)
                if plain and type(v) is bytes:
                    # The common case, without the general push's checks.
                    if len(cols.origins) != i:
                        cols.in_order = False
                    cols.values += v
                    cols.value_ends.append(len(cols.values))
                    cols.origins.append(i)
                    continue
                out.record = record
                out._push(_as_bytes(v, f"the value {f.__name__} returned"), KEEP, KEEP, None, None)
            elif kind == "filter":
                if f(record):
                    out.record = record
                    out.forward()
            elif kind == "route":
                to = f(record)
                out.record = record
                out.forward(to)
            else:
                out.record = record
                f(record, out)
        except Broken:
            raise
        except Exception as e:  # noqa: BLE001 - any failure refuses the record
            if flat:
                cols.rollback(mark)
            cols.rejected.append((i, _reason(e)))
    return cols


def _plain_filter(f, b, cols):
    """A filter over a batch without keys, headers or tombstones: kept
    records are copied as they came, without the general push."""
    values, ends = b.values, b.value_ends
    out_values, out_ends, origins = cols.values, cols.value_ends, cols.origins
    start = 0
    for i, end in enumerate(ends):
        value = values[start:end]
        start = end
        try:
            keep = f(Record(value, i, b))
        except Broken:
            raise
        except Exception as e:  # noqa: BLE001 - any failure refuses the record
            cols.rejected.append((i, _reason(e)))
            continue
        if keep:
            out_values += value
            out_ends.append(len(out_values))
            origins.append(i)
    # Output i came from input i for every i only when all were kept.
    cols.in_order = len(origins) == len(ends)


class _OneRecord:
    """A batch of one record, in the contract's batch fields."""

    __slots__ = (
        "partition", "values", "value_ends", "has_value", "keys", "key_ends",
        "has_key", "headers", "header_ends", "timestamps", "offsets",
    )

    def __init__(self, r):
        self.partition = r.position.partition
        self.values = r.value or b""
        self.value_ends = [len(self.values)]
        self.has_value = [] if r.value is not None else [False]
        self.keys = r.key or b""
        self.key_ends = [len(self.keys)] if r.key is not None else []
        self.has_key = [True] if r.key is not None else []
        self.headers = list(r.headers)
        self.header_ends = [len(self.headers)] if self.headers else []
        self.timestamps = [r.timestamp]
        self.offsets = [r.position.offset]


def run_record(r):
    """``Columns`` for one contract ``Record``: the batch path over a batch
    of one, so both calls give the same answer."""
    return run_batch(_OneRecord(r))


def run_init(config):
    """Call the registered ``@weir.init``, or refuse any config when there
    is none; raises with the reason."""
    from ._host import Config, _set_config

    global _windows
    kind, f = _register.registered()
    _set_config(config)
    if kind in BUILT:
        _windows = f(Config(config))
    elif _register._init is not None:
        _register._init(Config(config))
    elif config:
        raise Broken(f"unknown config key `{config[0][0]}`: this transform takes no config")


class _TimerBatch:
    """Fired timers in the contract's batch fields, so timer handlers emit
    through the same ``Output``: key the timer's, timestamp its time."""

    def __init__(self, keys, key_ends, times):
        n = len(times)
        self.partition = 0
        self.values, self.value_ends, self.has_value = b"", [0] * n, [False] * n
        self.keys, self.key_ends, self.has_key = keys, key_ends, [True] * n
        self.headers, self.header_ends = [], []
        self.timestamps, self.offsets = times, [-1] * n


def run_timers(keys, key_ends, times, domains):
    """``Columns`` of the ``@weir.on_timer`` function over fired timers
    (origins index the timers); raises ``Broken``."""
    from .state import Timer

    f = _register._on_timer
    if f is None and _windows is not None:
        f = _windows.on_timer
    if f is None:
        raise Broken("timers fired but no @weir.on_timer function is registered")
    b = _TimerBatch(keys, key_ends, times)
    cols = Columns(len(times))
    out = Output(cols, None)
    start = 0
    for i, end in enumerate(key_ends):
        key = keys[start:end]
        start = end
        out.record = Record(None, i, b)
        mark = cols.mark()
        try:
            f(Timer(key, times[i], domains[i]), out)
        except Broken:
            raise
        except Exception as e:  # noqa: BLE001 - any failure refuses the timer
            cols.rollback(mark)
            cols.rejected.append((i, _reason(e)))
    return cols
