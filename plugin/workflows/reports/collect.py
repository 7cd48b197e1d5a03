"""What ``judgecp report`` reads: report files, and harness output folders in one command.

An argument is

* a ``judgecp evaluate --json`` report (any ``.json`` that is a report, e.g.
  VLMEvalKit's ``<model>_<dataset>_cp.json`` / ``_selective.json`` /
  ``_reliability.json``, which are the same reports);
* a harness output file a registered record format recognises (lm-eval's
  ``samples_<task>_<date>.jsonl``, a VLMEvalKit prediction file): it is
  evaluated with the protocol's defaults (and ``alphas``) first;
* a folder: every such file under it (sorted), ``results_*.json`` of lm-eval
  and other JSON that are not reports left out.

lm-eval's samples files are read with their run's ``results_<date>.json``
(same folder, same date) when it is there: a judge is named by the model and
the task (``Qwen/Qwen2-VL-7B: mllm_judge_cp``; lm-eval's folder name is
random for some models), and the subtasks of a group (``group_subtasks``:
``judgecp_demo`` -> ``judgecp_demo_easy``, ...) are one judge with groups
(:func:`combine_subtasks`), a Likert group calibrated per subtask (Mondrian, as lm-eval's table evaluates
each subtask on its own), so the
per-group figures are drawn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.base.schemas import describe_lines, describe_schema
from judgecp.data import Fields
from judgecp.data.formats import RecordBatch, record_format, sniff_format
from judgecp.kinds import get_kind
from judgecp.kinds.protocol import parse_settings
from judgecp.kinds.reading import from_table
from judgecp.present.runs import NIGHTLY_SCHEMAS
from judgecp.workflows.nightly.history import SCHEMA as HISTORY_SCHEMA
from judgecp.workflows.nightly.history import read_nights
from judgecp.workflows.results import verified
from judgecp.workflows.results.study import infer_kind
from judgecp.workflows.study import evaluate

#: lm-eval's samples and results file names: the task, then the run's date.
SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[\w.:-]+)$")
RESULTS_NAME = re.compile(r"^results_(?P<date>\d{4}-\d{2}-\d{2}T[\w.:-]+)$")
#: The record field that holds a grouped subtask's short name.
SUBTASK_FIELD = "subtask"
HARNESS_SUFFIXES = (".jsonl", ".xlsx", ".tsv", ".csv")


def is_report(path: Path) -> dict[str, Any] | None:
    """The report in ``path`` if it is a judgecp report (its digest checked: an edited one is an error), else
    ``None``."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # unreadable, not UTF-8 or JSON, nested too deep
        return None
    return verified(obj, path) if isinstance(obj, dict) and infer_kind(obj) is not None else None


def is_history(path: Path) -> bool:
    """Whether ``path`` is the JSON lines ``judgecp apply --history`` keeps (by its first line's schema)."""
    return describe_lines(path) == f"{describe_schema(HISTORY_SCHEMA)} (JSON lines)"


def nightly_result(path: Path) -> dict[str, Any] | None:
    """A nightly result of a folder that ``judgecp report`` draws (compare, plan, an apply summary with its
    history), its digest checked; else ``None``."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or obj.get("schema") not in NIGHTLY_SCHEMAS:
        return None
    if obj["schema"] == "judgecp.apply/1" and not obj.get("history"):
        return None  # an apply summary is drawn across the nights of its history; without one, nothing
    return verified(obj, path)


def harness_format(path: Path) -> str | None:
    """The registered record format that recognises ``path`` (lm-eval samples, VLMEvalKit predictions)."""

    fmt = sniff_format(path)
    return None if fmt == "table" else fmt


def display_name(path: Path, root: Path | None) -> str:
    match = SAMPLES_NAME.match(path.stem)
    stem = match.group("task") if match else path.stem
    if root is None or path.parent == root:
        return stem
    return f"{path.parent.relative_to(root).as_posix()}/{stem}"


def evaluate_batch(batch: Any, alphas: Sequence[float] | None, group: str | None = None,
                   per_group: bool = False) -> dict[str, Any]:
    """A reader's records evaluated with the defaults (``alphas`` where the kind sweeps; ``group``: per-group
    tables; ``per_group``: each group calibrated on its own, Mondrian, where the kind can)."""

    table = batch.table()
    data = from_table(table, batch.kind, Fields(group=group))
    mondrian = per_group and group is not None and "mondrian" in get_kind(data.kind).study.settings
    values: dict[str, Any] = {"mondrian": group} if mondrian else {"group": group}

    if alphas and "alphas" in get_kind(data.kind).study.settings:
        values["alphas"] = list(alphas)
    return evaluate(data, parse_settings(values, kind=data.kind), **table.info)


def evaluate_file(path: Path, fmt: str, alphas: Sequence[float] | None) -> dict[str, Any]:
    """``judgecp evaluate --format FMT PATH`` with the defaults (and ``alphas`` where the kind sweeps)."""

    return evaluate_batch(record_format(fmt).read(path), alphas)


def judge_model(results: dict[str, Any]) -> str | None:
    """The judge's name in an lm-eval results file: ``model_args``' pretrained model, else the model class."""
    found = results.get("config")
    config: dict[str, Any] = found if isinstance(found, dict) else {}
    args = config.get("model_args")
    if isinstance(args, str):  # "pretrained=org/name,dtype=float32"
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    for key in ("pretrained", "model", "model_name", "path"):
        value = args.get(key) if isinstance(args, dict) else None
        if isinstance(value, str) and value.strip():
            value = value.strip()
            return Path(value).name if value.startswith(("/", ".", "~")) else value  # a local path: its folder
    model = config.get("model")
    return str(model) if isinstance(model, str) and model else None


def read_results(folder: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """lm-eval's ``results_<date>.json`` files of ``folder`` and their contents, by date (unreadable ones left out)."""
    found = {}
    for f in sorted(folder.glob("results_*.json")):
        match = RESULTS_NAME.match(f.stem)
        try:
            obj = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if match and isinstance(obj, dict):
            found[match.group("date")] = (f, obj)
    return found


def combine_subtasks(group: str, batches: dict[str, Any]) -> Any:
    """One batch of a group's subtasks (in the group's order), each record's subtask in :data:`SUBTASK_FIELD`.

    A subtask whose records hold every other subtask's, the same records
    under the same ids (``<group>_all``), gives the records, each in the subtask that lists it, so no item counts twice;
    otherwise the subtasks' records are put together (ids prefixed with the
    subtask where two subtasks share one).
    """

    short = {t: t[len(group) + 1:] if t.startswith(group + "_") else t for t in batches}
    items = {t: {str(r["id"]): json.dumps(r, sort_keys=True) for r in b.records} for t, b in batches.items()}
    ids = {t: set(found) for t, found in items.items()}
    covering = [t for t in batches if all(ids[t] >= ids[o] and all(items[t][i] == items[o][i] for i in ids[o])
                                          for o in batches)]
    if covering:
        base = covering[0]
        member: dict[str, str] = {}
        for t in batches:
            for rid in sorted(ids[t]) if t != base else ():
                member.setdefault(rid, short[t])
        records = [{**r, SUBTASK_FIELD: member.get(str(r["id"]), short[base])} for r in batches[base].records]
        excluded, n_read = batches[base].excluded, batches[base].n_read
    else:
        shared = sum(len(i) for i in ids.values()) != len(set().union(*ids.values()))
        records = [{**r, SUBTASK_FIELD: short[t], **({"id": f"{short[t]}/{r['id']}"} if shared else {})}
                   for t, b in batches.items() for r in b.records]
        excluded, n_read = Exclusions(), sum(b.n_read for b in batches.values())
        for b in batches.values():
            excluded.merge(b.excluded)
    first = next(iter(batches.values()))
    info = {
        "lm_eval": {
            "group": group,
            "subtasks": list(batches),
            "samples_files": [b.info.get("lm_eval", {}).get("samples_file", b.source) for b in batches.values()],
        }
    }
    return RecordBatch(records, f"{group} ({len(batches)} subtasks)", excluded, n_read, info, kind=first.kind)


def lm_eval_runs(folder: Path, files: list[Path], root: Path | None,
                 alphas: Sequence[float] | None) -> tuple[list[tuple[str, Path, dict[str, Any]]], set[Path]]:
    """The samples files of ``folder`` that have their results file: ``(name, path, report)``, groups combined
    (their path: the results file), and the files used."""

    results = read_results(folder)
    runs: list[tuple[str, Path, dict[str, Any]]] = []
    used: set[Path] = set()
    for date, (results_file, res) in results.items():
        tasks = {m.group("task"): f for f in files if (m := SAMPLES_NAME.match(f.stem)) and m.group("date") == date}
        if not tasks:
            continue
        model = judge_model(res) or display_name(folder, root)
        found = res.get("group_subtasks")
        groups: dict[str, Any] = found if isinstance(found, dict) else {}
        for group, subtasks in groups.items():
            present = [t for t in subtasks if isinstance(t, str) and t in tasks]
            if len(present) < 2:
                continue
            batches = {t: record_format("lm-eval").read(tasks[t]) for t in present}
            if {r.get("shape") for b in batches.values() for r in b.records} not in ({"score"}, {"pair"}):
                continue  # mixed kinds, or choices (PARC has its own cells): each subtask is its own judge
            runs.append((f"{model}: {group}", results_file,
                         evaluate_batch(combine_subtasks(group, batches), alphas, SUBTASK_FIELD, per_group=True)))
            used.update(tasks[t] for t in present)
        for task, f in tasks.items():
            if f not in used:
                runs.append((f"{model}: {task}", f, evaluate_file(f, "lm-eval", alphas)))
                used.add(f)
    return runs, used


def collect(
    paths: Sequence[str | Path], alphas: Sequence[float] | None = None
) -> list[tuple[str, Path, dict[str, Any]]]:
    """``(name, path, report)`` for every report found or made from ``paths``, in order."""
    out: list[tuple[str, Path, dict[str, Any]]] = []
    for arg in paths:
        path = Path(arg)
        if path.is_dir():
            found = 0
            files = sorted(p for p in path.rglob("*") if p.is_file())
            used: set[Path] = set()
            for folder in sorted({f.parent for f in files if RESULTS_NAME.match(f.stem) and f.suffix == ".json"}):
                runs, taken = lm_eval_runs(folder, [f for f in files if f.parent == folder], path, alphas)
                out += runs
                used |= taken
                found += len(runs)
            for f in files:
                if f in used:
                    continue
                if f.suffix == ".json" and not f.name.startswith("results_"):
                    report = is_report(f) or nightly_result(f)
                    if report is not None:
                        out.append((display_name(f, path), f, report))
                        found += 1
                elif f.suffix == ".jsonl" and is_history(f):
                    out.append((display_name(f, path), f, {"schema": HISTORY_SCHEMA, "nights": read_nights(f)}))
                    found += 1
                elif f.suffix in HARNESS_SUFFIXES and (fmt := harness_format(f)) is not None:
                    out.append((display_name(f, path), f, evaluate_file(f, fmt, alphas)))
                    found += 1
            if not found:
                raise InputError(f"{path}: no judgecp report, lm-eval samples file or VLMEvalKit prediction file in it")
        elif path.is_file() and is_history(path):  # apply --history's JSON lines: the nights across
            out.append((path.stem, path, {"schema": HISTORY_SCHEMA, "nights": read_nights(path)}))
        elif path.is_file() and path.suffix != ".json" and (fmt := harness_format(path)) is not None:
            runs, _ = lm_eval_runs(path.parent, [path], None, alphas) if fmt == "lm-eval" else ([], set())
            out += runs or [(display_name(path, None), path, evaluate_file(path, fmt, alphas))]
        else:
            out.append((path.stem, path, {}))  # a report file: load_runs reads and checks it
    return [(name, p, report) for name, (_, p, report) in zip(distinct_names(out), out, strict=True)]


def run_date(path: Path) -> str | None:
    """The date of an lm-eval run from its results or samples file name: ``2026-11-28T11-59-39.291326``."""
    match = RESULTS_NAME.match(path.stem) or SAMPLES_NAME.match(path.stem)
    return match.group("date") if match else None


def distinct_names(found: Sequence[tuple[str, Path, Any]]) -> list[str]:
    """Names that tell repeated runs of one model and task apart, as short as does it: the run's date
    (``judgecp-replay: judgecp_demo, 2026-11-28 11:59``, seconds only where two runs share the minute), else
    the file's folder and name."""
    names = [name for name, _, _ in found]
    out = list(names)
    for name in set(names):
        where = [i for i, n in enumerate(names) if n == name]
        if len(where) < 2:
            continue
        dates = [run_date(found[i][1]) for i in where]
        if all(dates):
            for cut in (16, 19, None):  # minute, second, the whole date
                shown = [str(d)[:cut].replace("T", " ") for d in dates]
                shown = [s[:11] + s[11:].replace("-", ":") for s in shown]
                if len(set(shown)) == len(shown):
                    break
            if len(set(shown)) == len(shown):
                for i, date in zip(where, shown, strict=True):
                    out[i] = f"{name}, {date}"
                continue
        for i in where:
            out[i] = f"{name} ({found[i][1].parent.name}/{found[i][1].stem})"
    return out
