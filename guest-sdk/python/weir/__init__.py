"""Write weir stream transforms in Python.

A transform is one plain function per record, registered with a decorator::

    import weir

    @weir.map
    def shout(record):
        return record.value.upper()

``weir build`` turns the project into a component (componentize-py); the
SDK runs the per-record loop and builds the columnar batches of weir's
contract, so no transform touches the encoding. Off weir (``pytest``),
``weir.testing`` runs the same code natively.
"""

from ._batch import Output, Record
from ._columns import Batch
from ._errors import BadRecord, Broken
from ._json import json_field
from ._host import config, counter_add, gauge_set, log_debug, log_error, log_info, log_warn
from ._register import filter, filter_batch, flat_map, init, joined, map, on_timer, route, windowed

__all__ = [
    "BadRecord",
    "Batch",
    "Broken",
    "Output",
    "Record",
    "config",
    "counter_add",
    "filter",
    "filter_batch",
    "flat_map",
    "gauge_set",
    "init",
    "joined",
    "json_field",
    "log_debug",
    "log_error",
    "log_info",
    "log_warn",
    "map",
    "on_timer",
    "route",
    "windowed",
]
