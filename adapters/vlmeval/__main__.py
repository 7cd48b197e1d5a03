"""``python -m judgecp.adapters.vlmeval`` = ``judgecp vlmeval``."""

import sys

from judgecp.adapters.vlmeval.cli import main

sys.exit(main())
