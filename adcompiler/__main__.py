"""``python -m adcompiler``: the same console script as ``adcompiler``."""

import sys

from .cli.main import main

sys.exit(main())
