"""``python -m adcompiler``: the same console script as ``adcompiler``."""

import sys

from .cli import main

sys.exit(main())
