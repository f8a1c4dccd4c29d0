"""Prints the problems of a Parquet file in KernelBench's Hugging Face layout (columns code,
level, name, problem_id) as JSON lines, for kbench's dataset reader.

Run as a script (python parquet.py FILE), not imported with the worker package. On failure it
writes one line to standard error and exits with NO_READER (neither pyarrow nor pandas can be
imported), UNREADABLE (the file is not Parquet, or a part of it cannot be read) or
MISSING_COLUMNS (a column of the layout is absent); kbench turns these into its own messages.
"""

import json
import sys

COLUMNS = ("code", "level", "name", "problem_id")

NO_READER = 3
UNREADABLE = 4
MISSING_COLUMNS = 5


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _one_line(error):
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _check_columns(present):
    missing = [c for c in COLUMNS if c not in present]
    if missing:
        raise Failure(MISSING_COLUMNS,
                      "missing " + ", ".join(missing) + "; it has " +
                      (", ".join(str(c) for c in present) or "no columns"))


def rows(path):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    if pq is not None:
        try:
            file = pq.ParquetFile(path)
        except Exception as e:
            raise Failure(UNREADABLE, _one_line(e)) from None
        _check_columns(file.schema_arrow.names)
        try:
            return file.read(columns=list(COLUMNS)).to_pylist()
        except Exception as e:
            raise Failure(UNREADABLE, _one_line(e)) from None
    try:
        import pandas
    except ImportError:
        raise Failure(NO_READER, "neither pyarrow nor pandas can be imported") from None
    try:
        frame = pandas.read_parquet(path)
    except ImportError as e:  # pandas without a Parquet engine
        raise Failure(NO_READER, _one_line(e)) from None
    except Exception as e:
        raise Failure(UNREADABLE, _one_line(e)) from None
    _check_columns(list(frame.columns))
    return frame[list(COLUMNS)].to_dict("records")


def main(path):
    try:
        lines = [json.dumps({k: (int(row[k]) if k in ("level", "problem_id") and
                                 row[k] is not None else row[k]) for k in COLUMNS})
                 for row in rows(path)]
    except Failure as e:
        print(str(e), file=sys.stderr)
        return e.code
    except Exception as e:
        print(_one_line(e), file=sys.stderr)
        return UNREADABLE
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
