"""``python -m judgecp.cli`` = ``judgecp``."""

import sys

from judgecp.cli import main

sys.exit(main())
