"""``judgecp bench fitted``: every fitted method at 10k rows against plain split conformal (judgecp.bench.fitted)."""

from __future__ import annotations

import argparse
from typing import Any

from judgecp.bench.fitted import add_arguments
from judgecp.bench.fitted import run as run_bench


def add_parser(bench: Any) -> None:
    """Add ``fitted`` to the ``judgecp bench`` sub-parsers."""
    b = bench.add_parser(
        "fitted", help="every fitted method (and its cv=5 version) at 10k rows vs plain split conformal"
    )

    add_arguments(b)
    b.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    return run_bench(args)
