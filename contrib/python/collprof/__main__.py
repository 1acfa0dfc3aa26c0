"""``python3 -m collprof``: see collprof.cli."""

import sys

from .cli import main

sys.exit(main())
