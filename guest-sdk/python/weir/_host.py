"""What the host offers a transform: its config, logging and metrics. In a
component they go to weir (``wit_world``); natively (tests) log lines are
printed and metrics kept in ``weir.testing.metrics``."""

from typing import Any, Dict, Optional

try:  # inside a component built by `weir build`
    from wit_world.imports import log as _log  # type: ignore[import-not-found, unused-ignore]
    from wit_world.imports import metrics as _metrics  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # natively
    _log = None
    _metrics = None

_config: Dict[str, str] = {}
native_metrics: Dict[str, Dict[str, Any]] = {"counters": {}, "gauges": {}}


def _set_config(pairs):
    global _config
    _config = dict(pairs)


class Config:
    """The pipeline's ``[transform.config]``: values are strings."""

    def __init__(self, pairs):
        self._pairs = dict(pairs)

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return self._pairs.get(key, default)

    def required(self, key: str) -> str:
        """The value of ``key``; refuses the config when it is missing."""
        if key not in self._pairs:
            raise ValueError(f"missing config key `{key}`")
        return self._pairs[key]

    def integer(self, key: str, default: int) -> int:
        v = self._pairs.get(key)
        if v is None:
            return default
        try:
            return int(v)
        except ValueError:
            raise ValueError(f"config key `{key}`: {v!r} is not an integer") from None

    def duration_ms(self, key: str, default: int) -> int:
        """A duration such as ``10s``, ``500ms``, ``2m`` or ``1h``, in ms."""
        v = self._pairs.get(key)
        if v is None:
            return default
        units = (("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000))
        for unit, scale in units:
            number = v[: -len(unit)]
            if v.endswith(unit) and number.strip().isdigit():
                return int(number) * scale
        raise ValueError(f"config key `{key}`: {v!r} is not a duration (e.g. 500ms, 10s, 2m, 1h)")

    def only(self, *keys: str) -> None:
        """Refuse keys other than ``keys`` (catches typos)."""
        for k in self._pairs:
            if k not in keys:
                raise ValueError(f"unknown config key `{k}` (known: {', '.join(keys) or 'none'})")


def config() -> Config:
    """The pipeline's config, as passed to ``@weir.init`` functions."""
    return Config(_config)


def _emit_log(level, message):
    if _log is None:
        print(f"[{level}] {message}")
        return
    _log.log(getattr(_log.Level, level.upper()), str(message))


def log_debug(message: object) -> None:
    _emit_log("debug", message)


def log_info(message: object) -> None:
    _emit_log("info", message)


def log_warn(message: object) -> None:
    _emit_log("warn", message)


def log_error(message: object) -> None:
    _emit_log("error", message)


def counter_add(name: str, delta: int = 1) -> None:
    """Add ``delta`` to counter ``name``; progress reports and ``/metrics``
    show it."""
    if _metrics is None:
        c = native_metrics["counters"]
        c[name] = c.get(name, 0) + delta
    else:
        _metrics.counter_add(name, delta)


def gauge_set(name: str, value: float) -> None:
    if _metrics is None:
        native_metrics["gauges"][name] = float(value)
    else:
        _metrics.gauge_set(name, float(value))
