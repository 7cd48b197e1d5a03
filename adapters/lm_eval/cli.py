"""What the ``judgecp`` command line runs for lm-eval (imported only by those subcommands)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from judgecp.errors import require


def print_tasks_path() -> int:
    from judgecp.adapters.lm_eval import tasks_path

    print(tasks_path())
    return 0


def run_lm_eval(argv: Sequence[str]) -> int:
    """``judgecp lm-eval ARGS``: lm-eval's own command line with judgecp registered first.

    For environments where the startup hook is off (``JUDGECP_LM_EVAL_AUTOLOAD=0``)
    or was not installed (e.g. judgecp on ``PYTHONPATH`` only).
    """
    require("lm_eval", "lm-eval", "`judgecp lm-eval`")
    from judgecp.adapters.lm_eval.discovery import install

    install()
    from lm_eval.__main__ import cli_evaluate

    saved = sys.argv
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    finally:
        sys.argv = saved
    return 0
