"""The exports of a stateful component: ``weir build`` makes this module the
app (world ``full-transformer``) when the user's ``app`` uses
``weir.state``; it adds the timer handler to ``weir._entry``'s exports."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import BatchError_Broken, TimeDomain

from ._entry import RecordTransform, Transform, _output_batch
from ._errors import Broken
from ._run import run_timers
from .state import EVENT_TIME, PROCESSING_TIME

__all__ = ["RecordTransform", "TimerHandler", "Transform"]


class TimerHandler(exports.TimerHandler):
    def on_timers(self, fired):
        domains = [EVENT_TIME if d == TimeDomain.EVENT_TIME else PROCESSING_TIME for d in fired.domains]
        try:
            cols = run_timers(fired.keys, fired.key_ends, fired.times, domains)
        except Broken as e:
            raise Err(BatchError_Broken(str(e))) from None
        return _output_batch(cols, fired.times)
