"""The lm-eval adapter as a judgecp plugin: its commands and the reader of lm-eval's samples files.

Registered through the ``judgecp`` entry point of this distribution, so the
core reaches it without importing it. Nothing here imports lm-eval until a
command runs.

* ``judgecp tasks-path``: the folder of judgecp's tasks (for ``--include_path``);
* ``judgecp lm-eval ARGS``: lm-eval's own command line with judgecp's models
  and tasks registered first (where the startup hook is off);
* ``judgecp bench capture``: judgecp's scoring paths against lm-eval's own, one random judge;
* ``--format lm-eval``: the judgecp records in ``samples_<task>_<date>.jsonl``
  (a sample holds the document's record under the task's first metric and
  ``null`` under the others; in files written before, every metric holds it:
  the first record found is taken).
  A line that is not JSON, a sample without a record and a repeated sample
  are counted (``malformed_json_line``, ``no_record_in_sample``,
  ``duplicate_record``), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judgecp.adapters.lm_eval import tasks_path
from judgecp.base.errors import InputError, require
from judgecp.base.exclusions import Exclusions
from judgecp.base.hookspecs import hookimpl
from judgecp.base.records import parse_judge_output
from judgecp.data.formats import RecordBatch, RecordFormat
from judgecp.data.tables import jsonl_objects


@hookimpl
def register_commands(commands: Any, benchmarks: Any) -> None:
    add_tasks_path_command(commands, "tasks-path", "lm-eval", tasks_path)
    p = commands.add_parser(
        "lm-eval", help="run lm-eval with judgecp's models and tasks registered (where the startup hook is off)",
        add_help=False, prefix_chars="\0",  # every argument goes to lm-eval, --help included
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=lambda args: run_lm_eval(args.args))
    c = benchmarks.add_parser(
        "capture", help="judgecp's scoring paths against lm-eval's own on one random judge (needs judgecp[lm-eval])")
    c.add_argument("--documents", type=int, default=24, help="documents per measurement (default 24)")
    c.add_argument(
        "--gen-tokens", type=int, default=64, help="tokens generated per document for chain of thought (default 64)"
    )
    c.add_argument("--repeats", type=int, default=3, help="timed repetitions; the median is reported (default 3)")
    c.add_argument(
        "--batch-size",
        default="1",
        help="batch sizes, comma-separated, each measured with the judge built once (e.g. 1,8,auto; default 1)",
    )
    c.add_argument(
        "--only",
        default=",".join(("image", "text", "cot")),
        help="sections to run: image (direct scoring), text (hf-judge against stock hf), cot (capture); default all",
    )
    c.add_argument("--device", default="cpu", help="torch device: cpu (default), cuda, cuda:1")
    c.add_argument("--dtype", default=None, help="model dtype (default bfloat16 on a GPU, float32 on a CPU)")
    c.add_argument("--hidden", type=int, default=64, help="language model width (default 64; 4096 for a real judge's)")
    c.add_argument(
        "--layers", type=int, default=2, help="layers of the language model and the vision tower (default 2)"
    )
    c.add_argument(
        "--vocab",
        type=int,
        default=None,
        help="widen the output layer to this many tokens, as a real judge's (e.g. 32000; default: the tokenizer's "
             "~400)",
    )
    c.set_defaults(func=run_bench_capture)


@hookimpl
def register_record_formats() -> list[RecordFormat]:
    return [RecordFormat("lm-eval", "lm-eval samples files (samples_<task>_<date>.jsonl of a judgecp task)",
                         read=read_samples, sniff=is_samples_file)]


def add_tasks_path_command(
    commands: Any, name: str, harness: str, folder: Callable[[], Path]
) -> None:
    """``judgecp NAME``: print the folder of judgecp's tasks for a harness (for its
    ``--include_path``)."""
    help_text = f"print the folder of judgecp's {harness} tasks (for --include_path)"
    p = commands.add_parser(name, help=help_text)
    p.set_defaults(func=lambda args: print_folder(folder()))


def print_folder(folder: Path) -> int:
    print(folder)
    return 0


def run_lm_eval(argv: Sequence[str]) -> int:
    """``judgecp lm-eval ARGS``: lm-eval's command line with judgecp registered first."""
    require("lm_eval", "lm-eval", "`judgecp lm-eval`")
    from judgecp.adapters.lm_eval.discovery import (
        install,  # lazy: imports the harness (torch, lm-eval)
    )

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


def run_bench_capture(args: argparse.Namespace) -> int:
    from judgecp.adapters.lm_eval.bench import (  # lazy: imports the harness (torch, lm-eval)
        bench_capture,
        parse_batch_sizes,
    )

    sizes = parse_batch_sizes(args.batch_size)
    sections = [s.strip() for s in str(args.only).split(",") if s.strip()]
    try:
        bench_capture(documents=args.documents, gen_tokens=args.gen_tokens, repeats=args.repeats, device=args.device,
                      dtype=args.dtype, hidden=args.hidden, layers=args.layers, vocab=args.vocab, batch_sizes=sizes,
                      sections=sections, out=sys.stdout)
    except KeyboardInterrupt:
        print("judgecp bench capture: interrupted (its temporary files are removed)", file=sys.stderr)
        return 130
    return 0


def is_samples_file(path: Path) -> bool:
    """An lm-eval samples file: ``samples_*.jsonl``, or a JSONL whose first line has ``doc_id`` and ``resps``."""
    if path.name.startswith("samples_") and path.suffix == ".jsonl":
        return True
    first = first_line_object(path)
    return first is not None and "doc_id" in first and "resps" in first


def first_line_object(path: Path) -> dict[str, Any] | None:
    """A file's first line as a JSON object, or ``None`` (unreadable, not JSON, not an object):
    what a harness's samples file is recognised by."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = json.loads(handle.readline())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return first if isinstance(first, dict) else None


def read_samples(path: Path, *, kind: str | None = None, **options: Any) -> RecordBatch:
    """The judgecp records of one lm-eval samples file (see the module docstring; records carry their kind)."""
    if options:
        raise InputError(f"--format lm-eval takes no reader options ({', '.join(options)})")
    excluded = Exclusions()
    records: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    n_read = 0
    with path.open(encoding="utf-8-sig", errors="replace") as handle:
        for lineno, sample in jsonl_objects(handle):
            n_read += 1
            if sample is None:
                excluded.add("malformed_json_line", f"line {lineno}")
                continue
            names = sample.get("metrics") if isinstance(sample.get("metrics"), list) else list(sample)
            # The first record with an id: a judge response (no id) may come first (lmms-eval's flat
            # ``filtered_resps``, read through judgecp.adapters.lmms_eval.plugin).
            parsed = (parse_judge_output(sample.get(m)) for m in names if isinstance(m, str))
            record = next((r for r in parsed if r and "id" in r), None)
            if record is None:
                excluded.add("no_record_in_sample", f"line {lineno}")
                continue
            text = json.dumps(record, sort_keys=True)
            if seen.get(record["id"]) == text:
                excluded.add("duplicate_record", record["id"])
                continue
            seen[record["id"]] = text
            records.append(record)
    if not records:
        reasons = ", ".join(f"{e['reason']}: {e['count']}" for e in excluded.to_json()) or "the file is empty"
        raise InputError(
            f"{path}: no judgecp record in this file ({reasons}); is it the samples file of a judgecp task?"
        )
    # In id order, as the tasks' aggregations sort them: the same records give the same splits.
    records.sort(key=lambda r: str(r["id"]))
    return RecordBatch(records, str(path), excluded, n_read, {"lm_eval": {"samples_file": str(path)}})
