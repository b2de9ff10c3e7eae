"""The decorators: each registers the one function of the transform."""

from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, TypeVar, Union

from ._errors import Broken

if TYPE_CHECKING:
    from ._batch import Output, Record
    from ._columns import Batch
    from ._host import Config

# What each decorator accepts; it returns the function as it was given.
Value = Union[bytes, str]
MapFn = TypeVar("MapFn", bound=Callable[["Record"], Optional[Value]])
FilterFn = TypeVar("FilterFn", bound=Callable[["Record"], bool])
FlatMapFn = TypeVar("FlatMapFn", bound=Callable[["Record", "Output"], None])
RouteFn = TypeVar("RouteFn", bound=Callable[["Record"], Optional[str]])
FilterBatchFn = TypeVar("FilterBatchFn", bound=Callable[["Batch"], Sequence[bool]])
InitFn = TypeVar("InitFn", bound=Callable[["Config"], None])
BuildFn = TypeVar("BuildFn", bound=Callable[["Config"], Any])
TimerFn = TypeVar("TimerFn", bound=Callable[[Any, "Output"], None])

# The registered per-record function, as (kind, function); init's; the
# timer handler's.
_transform = None
_init = None
_on_timer = None

KINDS = ("map", "filter", "flat_map", "route", "windowed", "joined", "filter_batch")


def _register(kind: str, f: Any) -> Any:
    global _transform
    if _transform is not None:
        raise Broken(
            f"a transform registers one function; {_transform[1].__name__} is "
            f"already registered, so @weir.{kind} {f.__name__} cannot be"
        )
    _transform = (kind, f)
    return f


def map(f: MapFn) -> MapFn:
    """``f(record) -> bytes | str``: one output per input with that value,
    keeping key, headers and timestamp. A record without a value (a
    tombstone) passes through without calling ``f``."""
    return _register("map", f)


def filter(f: FilterFn) -> FilterFn:
    """``f(record) -> bool``: records for which it is true pass through
    unchanged (tombstones included: ``record.value`` is ``None``)."""
    return _register("filter", f)


def flat_map(f: FlatMapFn) -> FlatMapFn:
    """``f(record, out)``: emit zero or more records through ``out``
    (``out.emit``, ``out.emit_tombstone``), to any named output."""
    return _register("flat_map", f)


def route(f: RouteFn) -> RouteFn:
    """``f(record) -> str | None``: the record passes through unchanged to
    the named output returned, or to the default output for ``None``."""
    return _register("route", f)


def filter_batch(f: FilterBatchFn) -> FilterBatchFn:
    """``f(batch) -> [bool]``: one answer per record of the call's
    ``weir.Batch`` (its columns, e.g. ``batch.json_numbers("amount")``);
    the records answered true pass through unchanged. One call per batch
    instead of one per record: the fast way to filter in Python."""
    return _register("filter_batch", f)


def init(f: InitFn) -> InitFn:
    """``f(config)``, called once before any record with the pipeline's
    ``[transform.config]``; raise to refuse it (say which key and why)."""
    global _init
    _init = f
    return f


def windowed(f: BuildFn) -> BuildFn:
    """``f(config) -> windows.Windowed``: the transform is that windowed
    aggregation (``weir.windows``), built at init from the config."""
    return _register("windowed", f)


def joined(f: BuildFn) -> BuildFn:
    """``f(config) -> joins.Join``: the transform is that stream-stream
    join (``weir.joins``), built at init from the config."""
    return _register("joined", f)


def on_timer(f: TimerFn) -> TimerFn:
    """``f(timer, out)``, called for each fired timer (``weir.state``
    registers them) after the batch's records; emits through ``out`` like a
    ``flat_map`` (key: the timer's; timestamp: its time)."""
    global _on_timer
    _on_timer = f
    return f


def registered() -> tuple:
    """The registered (kind, function); refuses a module without one."""
    if _transform is None:
        raise Broken(
            "no transform registered: decorate one function with @weir.map, "
            "@weir.filter, @weir.flat_map, @weir.route or @weir.filter_batch"
        )
    return _transform


def reset() -> None:
    """Forget the registration (tests register several transforms)."""
    global _transform, _init, _on_timer
    _transform = None
    _init = None
    _on_timer = None
