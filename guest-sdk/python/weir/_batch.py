"""The per-record loop over weir's columnar batches, and the output
columns it builds, following the contract's rules (wit/transform.wit): an
optional column stays empty while every record has its default there, and
is back-filled at the first record that differs. Works on any object with
the contract's batch fields (the generated ``Batch``, or the native one of
``weir.testing``)."""

import dataclasses
import json
from typing import Any, List, Optional, Tuple, Union

from ._errors import BadRecord, Broken

KEEP = object()
"""Default of ``Output.emit``'s key and headers: the input record's."""


class Record:
    """One input record. ``value`` is ``bytes``, or ``None`` for a record
    without a value (a tombstone); the other fields are read on demand."""

    __slots__ = ("value", "index", "_b", "_start")

    value: Optional[bytes]
    index: int

    def __init__(self, value: Optional[bytes], index: int, batch: Any) -> None:
        self.value = value
        self.index = index
        self._b = batch

    def json(self, cls: Any = None) -> Any:
        """The value decoded from JSON; with ``cls`` a dataclass, an instance
        of it. Records of a schema'd format (Avro, Protobuf, JSON Schema)
        reach the guest as JSON, so a dataclass that mirrors the schema reads
        them. A value that does not decode, or does not fit ``cls``, refuses
        the record."""
        if self.value is None:
            raise BadRecord("record has no value")
        try:
            data = json.loads(self.value)
        except ValueError as e:
            raise BadRecord(f"value is not JSON: {e}") from None
        if cls is None:
            return data
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"Record.json: {cls!r} is not a dataclass")
        if not isinstance(data, dict):
            raise BadRecord(f"value is not a {cls.__name__} object")
        try:
            return cls(**data)
        except TypeError as e:
            raise BadRecord(f"value is not a {cls.__name__}: {e}") from None

    @property
    def text(self) -> str:
        """The value as UTF-8 text; a value that is not refuses the record."""
        if self.value is None:
            raise BadRecord("record has no value")
        try:
            return self.value.decode()
        except UnicodeDecodeError as e:
            raise BadRecord(f"value is not UTF-8: {e}") from None

    @property
    def key(self) -> Optional[bytes]:
        """``bytes``, or ``None`` for a record without a key."""
        b, i = self._b, self.index
        if not b.key_ends or not b.has_key[i]:
            return None
        return b.keys[b.key_ends[i - 1] if i else 0 : b.key_ends[i]]

    @property
    def headers(self) -> List[Tuple[str, bytes]]:
        """``[(name, value)]`` in order."""
        b, i = self._b, self.index
        if not b.header_ends:
            return []
        start = b.header_ends[i - 1] if i else 0
        return [(h.name, h.value) for h in b.headers[start : b.header_ends[i]]]

    def header(self, name: str) -> Optional[bytes]:
        """The first header called ``name``, or ``None``."""
        for n, v in self.headers:
            if n == name:
                return v
        return None

    @property
    def timestamp(self) -> int:
        """Event time, ms since the Unix epoch."""
        return self._b.timestamps[self.index]

    @property
    def offset(self) -> int:
        return self._b.offsets[self.index]

    @property
    def partition(self) -> int:
        return self._b.partition


def _as_bytes(v, what):
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise Broken(f"{what} must be bytes or str, not {type(v).__name__}")


class Columns:
    """Output columns of one call, built record by record."""

    def __init__(self, inputs):
        self.values = bytearray()
        self.value_ends = []
        self.has_value = []
        self.keys = bytearray()
        self.key_ends = []
        self.has_key = []
        self.headers = []  # (name, value) pairs
        self.header_ends = []
        self.timestamps = None  # {output index: explicit timestamp}
        self.origins = []
        self.in_order = True  # output i came from input i, so far
        self.outputs = []
        self.routes = []
        self.rejected = []  # (index, reason)
        self.inputs = inputs

    def mark(self):
        return (len(self.value_ends), len(self.values), len(self.keys), len(self.headers))

    def rollback(self, m):
        n, nv, nk, nh = m
        del self.values[nv:], self.value_ends[n:], self.has_value[n:]
        del self.keys[nk:], self.key_ends[n:], self.has_key[n:]
        del self.headers[nh:], self.header_ends[n:], self.origins[n:], self.routes[n:]
        if self.timestamps:
            self.timestamps = {k: v for k, v in self.timestamps.items() if k < n}
        self.in_order = all(o == i for i, o in enumerate(self.origins))

    def push(self, origin, value, key, headers, timestamp, to):
        n = len(self.value_ends)
        if value is None:
            if not self.has_value:
                self.has_value = [True] * n
            self.has_value.append(False)
        else:
            self.values += value
            if self.has_value:
                self.has_value.append(True)
        self.value_ends.append(len(self.values))
        if key is not None or self.key_ends:
            if not self.key_ends:
                self.key_ends = [0] * n
                self.has_key = [False] * n
            if key is not None:
                self.keys += key
            self.key_ends.append(len(self.keys))
            self.has_key.append(key is not None)
        if headers or self.header_ends:
            if not self.header_ends:
                self.header_ends = [0] * n
            self.headers.extend(headers)
            self.header_ends.append(len(self.headers))
        if timestamp is not None:
            if self.timestamps is None:
                self.timestamps = {}
            self.timestamps[n] = timestamp
        if origin != n:
            self.in_order = False
        self.origins.append(origin)
        if to is not None or self.routes:
            r = 0
            if to is not None:
                if not isinstance(to, str) or not to:
                    raise Broken(f"an output name must be a non-empty str, not {to!r}")
                try:
                    r = self.outputs.index(to) + 1
                except ValueError:
                    self.outputs.append(to)
                    r = len(self.outputs)
            if not self.routes:
                self.routes = [0] * n
            self.routes.append(r)

    def timestamp_column(self, input_timestamps):
        """The full timestamp column, or [] when every output keeps its
        input's."""
        if not self.timestamps:
            return []
        ts = [input_timestamps[o] for o in self.origins]
        for i, t in self.timestamps.items():
            ts[i] = t
        return ts

    def rows(self):
        """Each output record as ``(origin, output, key, value, headers,
        timestamp)``: ``value`` None for a tombstone, ``timestamp`` None
        when it keeps its input's."""
        h0 = 0
        for i, end in enumerate(self.value_ends):
            start = self.value_ends[i - 1] if i else 0
            key = None
            if self.key_ends and self.has_key[i]:
                key = bytes(self.keys[(self.key_ends[i - 1] if i else 0) : self.key_ends[i]])
            h1 = self.header_ends[i] if self.header_ends else 0
            route = self.routes[i] if self.routes else 0
            present = not self.has_value or self.has_value[i]
            yield (
                self.origins[i],
                self.outputs[route - 1] if route else None,
                key,
                bytes(self.values[start:end]) if present else None,
                self.headers[h0:h1],
                (self.timestamps or {}).get(i),
            )
            h0 = h1

    def origin_column(self):
        """[] when output i came from input i for every input."""
        if self.in_order and len(self.origins) == self.inputs:
            return []
        return self.origins


class Output:
    """Where a ``flat_map`` function writes the outputs of one record."""

    __slots__ = ("_cols", "record")

    def __init__(self, cols, record):
        self._cols = cols
        self.record = record

    def emit(
        self,
        value: Union[bytes, str],
        *,
        key: Any = KEEP,
        headers: Any = KEEP,
        timestamp: Optional[int] = None,
        to: Optional[str] = None,
    ) -> None:
        """Emit ``value`` (bytes or str). Key and headers default to the
        input record's; ``timestamp`` (ms) to its; ``to`` names an output."""
        self._push(_as_bytes(value, "an emitted value"), key, headers, timestamp, to)

    def emit_json(
        self,
        value: Any,
        *,
        key: Any = KEEP,
        headers: Any = KEEP,
        timestamp: Optional[int] = None,
        to: Optional[str] = None,
    ) -> None:
        """Emit ``value`` (a dataclass instance, or anything ``json.dumps``
        takes) as compact JSON; a sink of a schema'd format encodes it
        against its schema."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        self.emit(json.dumps(value, separators=(",", ":")), key=key, headers=headers, timestamp=timestamp, to=to)

    def emit_tombstone(
        self, *, key: Any = KEEP, headers: Any = KEEP, timestamp: Optional[int] = None, to: Optional[str] = None
    ) -> None:
        """Emit a record without a value (it deletes its key from a
        compacted Kafka topic)."""
        self._push(None, key, headers, timestamp, to)

    def forward(self, to: Optional[str] = None) -> None:
        """Pass the input record through unchanged."""
        self._push(self.record.value, KEEP, KEEP, None, to)

    def _push(self, value, key, headers, timestamp, to):
        r = self.record
        key = r.key if key is KEEP else (None if key is None else _as_bytes(key, "a key"))
        if headers is KEEP:
            headers = r.headers
        else:
            headers = [(str(n), _as_bytes(v, "a header value")) for n, v in headers]
        self._cols.push(r.index, value, key, headers, timestamp, to)
