#!/usr/bin/env python3
"""Compare a bench workload's output rows from weir and from Spark as rows.

    same-rows.py W WEIR_ROWS SPARK_ROWS

Each file holds one JSON object a line (any order). The two write the same
rows in different shapes, so each row is read into what it says first:
W1 an object whatever its field order; W2 (key, window start in ms,
count), Spark writing the start as a timestamp and weir as ms with the
window's end beside it; W3 the line as written (the same shape on both
sides). Prints "the same rows as Spark" or how they differ, and exits 1
when they differ.
"""
import collections
import datetime
import json
import sys


def w1(line):
    return json.dumps(json.loads(line), sort_keys=True)


def w2(line):
    v = json.loads(line)
    start = v["start"]
    if isinstance(start, str):
        t = datetime.datetime.fromisoformat(start.replace("Z", "+00:00"))
        start = round(t.timestamp() * 1000)
    return (v["key"], start, v["count"])


def main():
    workload, ours, theirs = sys.argv[1:4]
    norm = {"w1": w1, "w2": w2, "w2g": w2}.get(workload, lambda line: line)

    def rows(path):
        with open(path, encoding="utf-8") as f:
            return collections.Counter(norm(line.rstrip("\n")) for line in f if line.strip())

    a, b = rows(ours), rows(theirs)
    if a == b:
        print("the same rows as Spark")
        return 0
    only_ours, only_theirs = a - b, b - a
    print(f"rows differ from Spark's: {sum(only_ours.values())} only in weir's, "
          f"{sum(only_theirs.values())} only in Spark's; e.g. {next(iter(only_ours or only_theirs))}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
