"""Prints the problems of a Parquet file in KernelBench's Hugging Face layout (columns code,
level, name, problem_id) as JSON lines, for kbench's dataset reader.

Run as a script (python parquet.py FILE), not imported with the worker package.
"""

import json
import sys

COLUMNS = ("code", "level", "name", "problem_id")


def rows(path):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        import pandas

        return pandas.read_parquet(path, columns=list(COLUMNS)).to_dict("records")
    return pq.read_table(path, columns=list(COLUMNS)).to_pylist()


def main(path):
    for row in rows(path):
        print(json.dumps({k: (int(row[k]) if k in ("level", "problem_id") else row[k])
                          for k in COLUMNS}))


if __name__ == "__main__":
    main(sys.argv[1])
