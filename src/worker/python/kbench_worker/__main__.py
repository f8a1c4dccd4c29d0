import atexit
import faulthandler
import os
import sys

from . import main

# A crash in a worker leaves a Python and native stack trace in its log.
faulthandler.enable()
code = main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
# Python's own shutdown of a process that imported torch took about a second a worker, one
# worker after another at the end of every command. What is registered to run at exit runs (the
# judge's compile caches are removed so), the streams are flushed, and the process ends at once.
atexit._run_exitfuncs()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code if isinstance(code, int) else 0)
