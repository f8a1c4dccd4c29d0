"""``python3 -m kbench_analyzer``: the static analyzer's command line (see cli.py)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
