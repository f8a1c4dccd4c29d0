#!/usr/bin/env python3
"""``python3 -I -S src/integrity/analyzer``: the static analyzer's command line.

Python runs this file when it is given the folder, and puts the folder first on sys.path (even
with -I), where the package kbench_analyzer (the analyzer itself) is found. ``--rules`` prints
the rules. See kbench_analyzer/__init__.py.
"""

import sys

from kbench_analyzer.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
