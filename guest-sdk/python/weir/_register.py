"""The decorators: each registers the one function of the transform."""

from ._errors import Broken

# The registered per-record function, as (kind, function); init's; the
# timer handler's.
_transform = None
_init = None
_on_timer = None

KINDS = ("map", "filter", "flat_map", "route", "windowed", "joined", "filter_batch")


def _register(kind, f):
    global _transform
    if _transform is not None:
        raise Broken(
            f"a transform registers one function; {_transform[1].__name__} is "
            f"already registered, so @weir.{kind} {f.__name__} cannot be"
        )
    _transform = (kind, f)
    return f


def map(f):
    """``f(record) -> bytes | str``: one output per input with that value,
    keeping key, headers and timestamp. A record without a value (a
    tombstone) passes through without calling ``f``."""
    return _register("map", f)


def filter(f):
    """``f(record) -> bool``: records for which it is true pass through
    unchanged (tombstones included: ``record.value`` is ``None``)."""
    return _register("filter", f)


def flat_map(f):
    """``f(record, out)``: emit zero or more records through ``out``
    (``out.emit``, ``out.emit_tombstone``), to any named output."""
    return _register("flat_map", f)


def route(f):
    """``f(record) -> str | None``: the record passes through unchanged to
    the named output returned, or to the default output for ``None``."""
    return _register("route", f)


def filter_batch(f):
    """``f(batch) -> [bool]``: one answer per record of the call's
    ``weir.Batch`` (its columns, e.g. ``batch.json_numbers("amount")``);
    the records answered true pass through unchanged. One call per batch
    instead of one per record: the fast way to filter in Python."""
    return _register("filter_batch", f)


def init(f):
    """``f(config)``, called once before any record with the pipeline's
    ``[transform.config]``; raise to refuse it (say which key and why)."""
    global _init
    _init = f
    return f


def windowed(f):
    """``f(config) -> windows.Windowed``: the transform is that windowed
    aggregation (``weir.windows``), built at init from the config."""
    return _register("windowed", f)


def joined(f):
    """``f(config) -> joins.Join``: the transform is that stream-stream
    join (``weir.joins``), built at init from the config."""
    return _register("joined", f)


def on_timer(f):
    """``f(timer, out)``, called for each fired timer (``weir.state``
    registers them) after the batch's records; emits through ``out`` like a
    ``flat_map`` (key: the timer's; timestamp: its time)."""
    global _on_timer
    _on_timer = f
    return f


def registered():
    """The registered (kind, function); refuses a module without one."""
    if _transform is None:
        raise Broken(
            "no transform registered: decorate one function with @weir.map, "
            "@weir.filter, @weir.flat_map, @weir.route or @weir.filter_batch"
        )
    return _transform


def reset():
    """Forget the registration (tests register several transforms)."""
    global _transform, _init, _on_timer
    _transform = None
    _init = None
    _on_timer = None
