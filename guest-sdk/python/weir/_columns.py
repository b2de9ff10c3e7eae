"""Whole-batch functions (``@weir.filter_batch``): the function sees the
call's records as columns and answers for all of them at once, like
PySpark's vectorized UDFs. In CPython compiled to wasm a Python call per
record costs more than most filters' own work; one call per batch, with
the JSON field read by the host (``weir:transform/json``), does not."""

from itertools import accumulate

from ._batch import Output, Record
from ._errors import BadRecord, Broken
from ._json import json_field

try:  # inside a component built by `weir build`
    from wit_world.imports import json as _json_import  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # natively
    _json_import = None

_NAN = float("nan")


class Batch:
    """The records of one call, by column. ``len(batch)`` records; record
    ``i`` is ``batch.value(i)``."""

    __slots__ = ("_b", "rejected")

    def __init__(self, b):
        self._b = b
        # {index: reason}: records refused while reading columns.
        self.rejected = {}

    def __len__(self):
        return len(self._b.value_ends)

    def value(self, i):
        """Record ``i``'s value, ``bytes`` (``None`` for a tombstone)."""
        b = self._b
        if b.has_value and not b.has_value[i]:
            return None
        return b.values[b.value_ends[i - 1] if i else 0 : b.value_ends[i]]

    def values(self):
        """Every record's value, as ``value(i)`` gives it."""
        b = self._b
        starts = [0, *b.value_ends[:-1]]
        vs = [b.values[s:e] for s, e in zip(starts, b.value_ends)]
        if b.has_value:
            vs = [v if present else None for v, present in zip(vs, b.has_value)]
        return vs

    @property
    def timestamps(self):
        """Event times, ms since the Unix epoch."""
        return self._b.timestamps

    def json_numbers(self, name):
        """The number in member ``name`` of each record's JSON object: a
        ``float``, NaN where the member is absent or not a number (NaN
        compares false with everything, so ``n > 100`` keeps only numbers
        above 100). A record that is not a JSON object, or has no value, is
        refused as a bad record whatever the function answers for it. In a
        component the host reads the whole column in one call."""
        b = self._b
        if _json_import is None:
            return self._numbers_natively(name)
        col = _json_import.numbers(b.values, b.value_ends, name)
        for i in col.not_objects:
            self.rejected.setdefault(i, self._why_not(i))
        return col.values

    def _why_not(self, i):
        b = self._b
        if b.has_value and not b.has_value[i]:
            return "record has no value"
        return "not a JSON object"

    def _numbers_natively(self, name):
        out = []
        for i, v in enumerate(self.values()):
            try:
                n = json_field(v, name, default=None)
            except BadRecord as e:
                self.rejected.setdefault(i, str(e))
                n = None
            numeric = type(n) in (int, float)
            out.append(float(n) if numeric else _NAN)
        return out


def run_filter_batch(f, b, cols):
    """Fill ``cols`` with the records ``f`` keeps, unchanged."""
    view = Batch(b)
    keep = list(f(view))
    n = len(b.value_ends)
    if len(keep) != n:
        raise Broken(f"{f.__name__} answered {len(keep)} times for a batch of {n} records")
    rejected = view.rejected
    cols.rejected.extend(sorted(rejected.items()))
    kept = [i for i, k in enumerate(keep) if k and i not in rejected]
    if b.key_ends or b.header_ends or b.has_value:
        out = Output(cols, None)
        for i in kept:
            out.record = Record(view.value(i), i, b)
            out.forward()
        return
    if len(kept) == n:
        cols.values, cols.value_ends, cols.origins = b.values, list(b.value_ends), kept
        return
    ends = b.value_ends
    values = b.values
    parts = [values[ends[i - 1] if i else 0 : ends[i]] for i in kept]
    cols.values = b"".join(parts)
    cols.value_ends = list(accumulate(map(len, parts)))
    cols.origins = kept
    cols.in_order = False
