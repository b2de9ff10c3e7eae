"""Uppercase guest in Python: ASCII-uppercases each record's value; key and
headers pass through, timestamp is kept. Accepts no configuration.

Build: scripts/build-polyglot OUTDIR (componentize-py, world `record-transformer`).
"""
from typing import List, Tuple

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import Batch, OutputBatch, OutputRecord, Record


class Transform(exports.Transform):
    def init(self, config: List[Tuple[str, str]]) -> None:
        if config:
            raise Err(f"unknown config key {config[0][0]!r}: uppercase takes no configuration")

    def process_batch(self, input: Batch) -> OutputBatch:
        # One output per input, in order: origins/routes/timestamps stay empty.
        return OutputBatch(
            values=input.values.upper(),  # bytes.upper() only touches ASCII
            value_ends=input.value_ends,
            has_value=input.has_value,
            keys=input.keys,
            key_ends=input.key_ends,
            has_key=input.has_key,
            headers=input.headers,
            header_ends=input.header_ends,
            timestamps=[],
            origins=[],
            outputs=[],
            routes=[],
            rejected=[],
        )



class RecordTransform(exports.RecordTransform):
    def process_record(self, input: Record) -> List[OutputRecord]:
        value = None if input.value is None else input.value.upper()
        return [OutputRecord(output=None, key=input.key, value=value,
                             headers=input.headers, timestamp=None)]
