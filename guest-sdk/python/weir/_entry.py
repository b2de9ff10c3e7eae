"""The component's exports: ``weir build`` makes this module the app that
componentize-py builds, and it imports the user's module, ``app``, whose
decorators register the transform. Converts between the contract's types
and the SDK's."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import (
    BadRecord as WireBadRecord,
    BatchError_Broken,
    Header,
    OutputBatch,
    OutputRecord,
    RecordError_BadRecord,
    RecordError_Broken,
)

import app  # noqa: F401 - registers the transform

from ._errors import Broken
from ._run import run_batch, run_init, run_record


def _headers(pairs):
    return [Header(name=n, value=v) for n, v in pairs]


def _output_batch(cols, input_timestamps):
    return OutputBatch(
        values=bytes(cols.values),
        value_ends=cols.value_ends,
        has_value=cols.has_value,
        keys=bytes(cols.keys),
        key_ends=cols.key_ends,
        has_key=cols.has_key,
        headers=_headers(cols.headers),
        header_ends=cols.header_ends,
        timestamps=cols.timestamp_column(input_timestamps),
        origins=cols.origin_column(),
        outputs=cols.outputs,
        routes=cols.routes,
        rejected=[WireBadRecord(index=i, reason=r) for i, r in cols.rejected],
    )


class Transform(exports.Transform):
    def init(self, config):
        try:
            run_init(config)
        except Exception as e:  # noqa: BLE001 - refuses the config, with why
            raise Err(str(e)) from None

    def process_batch(self, input):
        try:
            return _output_batch(run_batch(input), input.timestamps)
        except Broken as e:
            raise Err(BatchError_Broken(str(e))) from None


class RecordTransform(exports.RecordTransform):
    def process_record(self, input):
        try:
            cols = run_record(input)
        except Broken as e:
            raise Err(RecordError_Broken(str(e))) from None
        if cols.rejected:
            raise Err(RecordError_BadRecord(cols.rejected[0][1]))
        return [
            OutputRecord(output=output, key=key, value=value, headers=_headers(headers), timestamp=ts)
            for _, output, key, value, headers, ts in cols.rows()
        ]
