"""The filter-and-flag as a newcomer first writes it in Python: each record
decoded with ``json.loads``, changed, encoded with ``json.dumps``."""

import json

import weir


@weir.flat_map
def filter_and_flag(record, out):
    order = json.loads(record.value)
    if order["amount"] < 10:
        return
    if order["amount"] >= 1000:
        order["big"] = True
    out.emit(json.dumps(order))
