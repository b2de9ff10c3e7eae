"""Drops orders under 10, flags those of 1000 and more with "big": true; a
record that is not a JSON object with a number `amount` is refused. The way
the README teaches: ``weir.json_field`` reads the one field (one regular
expression when the members before it are simple), and the output is the
record's own bytes, or them with the flag spliced in before the closing
brace. Build: copy into a `weir new --lang python` project, then `weir
build`. ``naive.py`` beside it is the same with ``json.loads``/``dumps``."""

import weir

FLAG = b',"big":true}'


@weir.flat_map
def filter_and_flag(record, out):
    amount = weir.json_field(record.value, "amount")
    if not isinstance(amount, (int, float)) or isinstance(amount, bool):
        raise weir.BadRecord("amount is not a number")
    if amount < 10:
        return
    value = record.value
    out.emit(value[: value.rindex(b"}")] + FLAG if amount >= 1000 else value)
