import faulthandler
import sys

from . import main

# A crash in a worker leaves a Python and native stack trace in its log.
faulthandler.enable()
sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
