"""Routes JSON records to the named output `eu` or `us` by their `region`
field; other regions and records without one go to the default output; a
value that is not a JSON object is a bad record. The Rust `router` example
with `field = "region"`, `route.eu = "eu"`, `route.us = "us"`,
`strict = "true"` does the same. Build: copy into a `weir new --lang
python` project, then `weir build`."""

import json

import weir


@weir.route
def by_region(record):
    doc = json.loads(record.value)
    if not isinstance(doc, dict):
        raise weir.BadRecord("not a JSON object")
    region = doc.get("region")
    return region if region in ("eu", "us") else None
