import sys

from . import main

sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
