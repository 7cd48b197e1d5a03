"""The VLMEvalKit adapter as a judgecp plugin: ``judgecp vlmeval`` and the prediction-file reader.

Registered through the ``judgecp`` entry point of this distribution, so the
core reaches it without importing it. Nothing here imports VLMEvalKit.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from judgecp.base.hookspecs import hookimpl
from judgecp.data.formats import RecordBatch, RecordFormat


@hookimpl
def register_commands(commands: Any, benchmarks: Any) -> None:
    p = commands.add_parser(
        "vlmeval",
        help="run VLMEvalKit's run.py with judgecp's datasets and models registered; build judge TSVs",
        add_help=False,
        prefix_chars="\0",  # every argument goes to the adapter, --help included
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=run_vlmeval)


@hookimpl
def register_record_formats() -> list[RecordFormat]:
    return [
        RecordFormat(
            "vlmeval",
            "VLMEvalKit prediction files (<model>_<dataset>.xlsx/.tsv) with their logprob sidecars",
            read=read_prediction_file,
            sniff=is_prediction_file,
        )
    ]


def run_vlmeval(args: argparse.Namespace) -> int:
    from judgecp.adapters.vlmeval.cli import (
        main,  # lazy: the judgecp command loads this plugin; VLMEvalKit's parts only when used
    )

    return int(main(args.args))


def is_prediction_file(path: Path) -> bool:
    """A VLMEvalKit prediction file: ``.xlsx``, or a sidecar beside it."""
    return path.suffix.lower() == ".xlsx" or any(path.parent.glob(f"{path.stem}_lprecords*.jsonl"))


def read_prediction_file(path: Path, *, kind: str | None = None, **options: Any) -> RecordBatch:
    from judgecp.adapters.vlmeval.evaluation import (
        prediction_batch,  # lazy: the judgecp command loads this plugin; VLMEvalKit's parts only when used
    )

    return prediction_batch(path, kind=kind, **options)
