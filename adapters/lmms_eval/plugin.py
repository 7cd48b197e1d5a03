"""The lmms-eval adapter as a judgecp plugin: its commands and the reader of lmms-eval's samples files.

Registered through the ``judgecp`` entry point of this distribution; nothing
here imports lmms-eval until a command runs.

* ``judgecp lmms-eval-tasks-path``: the folder of judgecp's lmms-eval tasks (for ``--include_path``);
* ``--format lmms-eval``: the judgecp records in lmms-eval's
  ``<date>_samples_<task>.jsonl``. lmms-eval writes a sample without its
  document (``doc`` is dropped) and, for generation, without ``resps``; the
  task's first metric holds the document's record, as in lm-eval's samples
  files, so the lm-eval adapter's reader reads it
  (:func:`judgecp.adapters.lm_eval.plugin.read_samples`: counted exclusions for
  a line that is not JSON, a sample without a record, a repeated record).
  Recognised by content: the first line has ``doc_id`` and ``doc_hash`` and no ``doc``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from judgecp.adapters.lm_eval.plugin import add_tasks_path_command, first_line_object
from judgecp.adapters.lm_eval.plugin import read_samples as read_lm_eval_samples
from judgecp.adapters.lmms_eval import tasks_path
from judgecp.base.hookspecs import hookimpl
from judgecp.data.formats import RecordBatch, RecordFormat


@hookimpl
def register_commands(commands: Any, benchmarks: Any) -> None:
    add_tasks_path_command(commands, "lmms-eval-tasks-path", "lmms-eval", tasks_path)


@hookimpl
def register_record_formats() -> list[RecordFormat]:
    return [RecordFormat("lmms-eval", "lmms-eval samples files (<date>_samples_<task>.jsonl of a judgecp task)",
                         read=read_samples, sniff=is_samples_file)]


def is_samples_file(path: Path) -> bool:
    """An lmms-eval samples file: a JSONL whose first line has ``doc_id`` and ``doc_hash`` and no ``doc``."""
    first = first_line_object(path)
    return first is not None and "doc_id" in first and "doc_hash" in first and "doc" not in first


def read_samples(path: Path, *, kind: str | None = None, **options: Any) -> RecordBatch:
    """The judgecp records of one lmms-eval samples file (see the module docstring)."""
    batch = read_lm_eval_samples(path, kind=kind, **options)
    return dataclasses.replace(batch, info={"lmms_eval": {"samples_file": str(path)}})
