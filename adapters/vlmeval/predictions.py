"""Read a VLMEvalKit prediction file and the sidecar records into judgecp records.

VLMEvalKit writes ``<work_dir>/<model>/<eval_id>/<model>_<dataset>.xlsx``
(``.tsv``/``.json`` with ``PRED_FORMAT``): the dataset's columns (``index``,
``answer``, ``category``, ...) plus ``prediction`` and, when every row came
back structured, ``extra_records``. Two things go wrong in practice, both
repaired or counted here, never silently dropped:

* a partial resume (``--reuse`` after an interrupted run) merges reused
  rows (plain text) with new rows (``{"prediction", "extra_records"}``
  dicts) and writes ``str(dict)`` into ``prediction`` for the new ones, with
  no ``extra_records`` column. Such a cell is parsed back (flag
  ``resume_repaired``); one that cannot be parsed is excluded as
  ``corrupted_prediction``.
* rows without an embedded record (reused rows, or a file written by a model
  that does not capture): their record comes from the sidecar JSONL
  (``<model>_<dataset>_lprecords*.jsonl`` beside the file, in the model
  folder or in any run folder of the model; flag ``record_from_sidecar``) if
  its prediction fingerprint matches the row's prediction; otherwise the row
  is excluded as ``record_prediction_mismatch`` (a record from another
  run) or ``no_logprob_record``.

Records are the judge outputs capture writes (``judgecp.record/1`` with the
row's ``id``, ``task``, ``judge`` and ``meta.prediction_sha1``); the layout
before it (``{"v": 1, "kind", ...}``, old runs) is converted on read
(:func:`legacy_record`).

Other exclusions: ``inference_failed`` (VLMEvalKit's failure message),
``duplicate_index``, ``index_missing``, and the capture failures
``no_capture``, ``beam_search``, ``api_no_logprobs``, ``no_answer_letter``.
The reader is generic (:func:`read_predictions`); one function per kind turns
its rows into ``judgecp.record/1`` records with the core's builders, which
the core reads as any record file: :func:`likert_records` (``score``),
:func:`pairwise_records` (``pair``, one per row) and :func:`option_records`
(``choice``: PARC variation datasets and VLMEvalKit's own multiple-choice
benchmarks, whose options and answer key are the prediction file's
``A``..``Z`` and ``answer`` columns, or, when the file lacks them, the
dataset's TSV in ``$LMUData``).
"""

from __future__ import annotations

import ast
import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgecp.adapters.capture.generate import CAPTURE_FAILURE_FLAGS
from judgecp.adapters.vlmeval.runtime import SIDECAR_TAG, prediction_sha1
from judgecp.adapters.vlmeval.specs import (
    JudgeSpec,
    dataset_names,
)
from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.base.records import (
    FIELDS,
    choice_record,
    judge_output,
    pair_record,
    parse_judge_output,
    score_record,
)
from judgecp.base.scale import LabelScale
from judgecp.data.choice import LETTERS, row_options, variation_name
from judgecp.data.fields import to_list, to_object
from judgecp.data.pair import ORDERS_FWD, ORDERS_REV
from judgecp.data.tables import read_jsonl
from judgecp.data.tables import read_table as core_read_table
from judgecp.kinds import get_kind, kind_names

#: VLMEvalKit's inference failure marker (``vlmeval.smp.file.INFER_FAIL_MSG``).
INFER_FAIL_MARKER = "Failed to obtain answer"

FLAG_RESUME_REPAIRED = "resume_repaired"
FLAG_FROM_SIDECAR = "record_from_sidecar"


@dataclass
class PredictionRow:
    index: str
    prediction: str
    columns: dict[str, Any]
    record: dict[str, Any] | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class PredictionTable:
    """Rows of a prediction file with their records, and what was repaired or left out."""

    path: Path
    stem: str
    dataset: str | None
    rows: list[PredictionRow]
    columns: list[str]
    excluded: Exclusions = field(default_factory=Exclusions)
    repaired: Exclusions = field(default_factory=Exclusions)
    sidecars: list[Path] = field(default_factory=list)
    n_read: int = 0
    record_sources: dict[str, int] = field(default_factory=dict)
    #: Flags of the rows given to the core (reader's and capture's), for kinds whose core records carry none.
    flags: Exclusions = field(default_factory=Exclusions)
    #: Where the options and answer key came from (multiple choice): the prediction file or a TSV.
    options_source: str | None = None
    #: Rows whose records reached the core's results (pairwise: both rows of every pair kept).
    rows_used: int | None = None

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "prediction_file": str(self.path),
            "dataset": self.dataset,
            "rows_read": self.n_read,
            "sidecars": [str(p) for p in self.sidecars],
            "record_sources": dict(self.record_sources),
            "repaired": self.repaired.to_json(key="repair"),
            "excluded_by_reader": self.excluded.to_json(),
        }
        if self.flags:
            out["row_flags"] = self.flags.to_json(key="flag")
        if self.options_source is not None:
            out["options_from"] = self.options_source
        if self.rows_used is not None:
            out["rows_used"] = self.rows_used
        return out

    def record_dataset(self) -> str | None:
        """The dataset the records were captured for (VLMEvalKit's own benchmarks: not in our name list)."""
        names = {str(r.record.get("task")) for r in self.rows if r.record and r.record.get("task")}
        return names.pop() if len(names) == 1 else None

    def record_model(self) -> str | None:
        names = {str(r.record.get("judge")) for r in self.rows if r.record and r.record.get("judge")}
        return names.pop() if len(names) == 1 else None


# -- the file ------------------------------------------------------------------


def _cell(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def read_table(path: Path, excluded: Exclusions | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of a VLMEvalKit prediction file (xlsx, tsv, csv, json, jsonl), read by the core's
    table reader (every CSV/TSV cell a string; rows it cannot read are counted in ``excluded``)."""
    table = core_read_table(path, engine="python")
    if excluded is not None:
        excluded.merge(table.excluded)
    return table.names, [{k: _cell(v) for k, v in table.row(i).items()} for i in range(table.n_rows)]


def split_stem(stem: str, dataset: str | None = None) -> tuple[str | None, str | None]:
    """``(model, dataset)`` from a prediction file stem ``<model>_<dataset>``, when recognisable."""
    names = [dataset] if dataset else sorted(dataset_names(), key=len, reverse=True)
    for name in names:
        if name and stem.endswith("_" + name):
            return stem[: -len(name) - 1], name
    if dataset is None and "_PARC_" in stem:  # PARC datasets are named when built: PARC_<name>
        model, name = stem.rsplit("_PARC_", 1)
        if model and name:
            return model, "PARC_" + name
    return None, dataset


# -- records -------------------------------------------------------------------


def legacy_record(old: dict[str, Any]) -> dict[str, Any] | None:
    """A capture record of the layout before ``judgecp.record/1`` as the judge output capture writes now.

    Older runs (and runs resumed with their ``extra_records``) hold
    ``{"v": 1, "kind", "source", "logprobs", "parsed" | "answer", "stage",
    "position", "n_tokens", "letters", "flags", "index", "dataset", "model",
    "prediction_sha1"}``: the kind becomes the shape, ``parsed``/``answer``
    the ``prediction``, ``index``/``dataset``/``model`` the ``id``/``task``/
    ``judge``, the rest ``meta``. ``None`` when ``old`` is not such a record.
    """
    kind = old.get("kind")
    if old.get("v") != 1 or kind not in kind_names() or not get_kind(kind).reader.record_shape:
        return None
    shape = get_kind(kind).reader.record_shape
    meta = {k: old[k] for k in ("stage", "position", "n_tokens", "letters", "source", "prediction_sha1", "written_at")
            if k in old}
    record = judge_output(
        shape,
        logprobs=old.get("logprobs"),
        prediction=old.get("parsed" if shape == "score" else "answer"),
        flags=old.get("flags") or [],
        **meta,
    )
    for name, key in (("id", "index"), ("task", "dataset"), ("judge", "model")):
        if old.get(key) is not None:
            record[name] = str(old[key])
    return record


def _parse_record(value: Any) -> dict[str, Any] | None:
    """The judge output in a cell or sidecar line (its JSON text or the dict), the old layout converted."""
    obj = to_object(value)
    return (legacy_record(obj) or parse_judge_output(obj)) if isinstance(obj, dict) else None


def _repair_prediction(text: str) -> dict[str, Any] | None:
    """``str({'prediction': ..., 'extra_records': ...})`` back into the dict, or ``None``."""
    stripped = text.strip()
    if not (stripped.startswith("{") and "'prediction'" in stripped and "'extra_records'" in stripped):
        return None
    try:
        obj = ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {}
    if isinstance(obj, dict) and "prediction" in obj and "extra_records" in obj:
        return obj
    return {}


def find_sidecars(path: Path, stem: str) -> list[Path]:
    """Sidecars of ``<stem>`` beside the file, beside its link target, in the model folder and its run folders.

    Records are matched to rows by index and prediction fingerprint; a short
    prediction ("Score: 4") can have the same fingerprint in two runs, so the
    order decides: the file's own run folder wins, then the newest sidecar.
    """
    roots: list[Path] = []
    for base in (path.parent, path.resolve().parent):
        for root in (base, base.parent):
            if root not in roots:
                roots.append(root)
    pattern = f"{stem}{SIDECAR_TAG}*.jsonl"
    found: set[Path] = set()
    for root in roots:
        for candidate in [*root.glob(pattern), *root.glob(f"*/{pattern}")]:
            if candidate.is_file():
                found.add(candidate.resolve())
    own = path.resolve().parent
    # Oldest first, the prediction file's own run folder last: where several sidecars hold a
    # matching record for a row, the reader takes the last one.
    return sorted(found, key=lambda p: (p.parent == own, p.stat().st_mtime, str(p)))


def read_sidecars(paths: Sequence[Path], excluded: Exclusions) -> dict[str, list[dict[str, Any]]]:
    """Sidecar records by index (``id``; old layout converted); unreadable lines are counted as
    ``sidecar_malformed_line``."""
    by_index: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        for lineno, line in read_jsonl(path):
            rec = _parse_record(line)
            if rec is None or rec.get("id") is None:
                excluded.add("sidecar_malformed_line", f"{path.name}:{lineno}")
                continue
            by_index.setdefault(str(rec["id"]), []).append(rec)
    return by_index


def _fingerprint(record: dict[str, Any]) -> Any:
    return (record.get("meta") or {}).get("prediction_sha1")


def _index_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value).strip()


def read_predictions(
    path: str | Path,
    *,
    dataset: str | None = None,
    sidecars: Sequence[str | Path] | None = None,
    search_sidecars: bool = True,
) -> PredictionTable:
    """Rows of a prediction file, each with its record (embedded, repaired or from a sidecar).

    Rows that cannot get a record are kept in ``rows`` with ``record=None``
    only when they are usable otherwise; everything left out is in
    ``excluded`` with its reason.
    """
    p = Path(path)
    read_excluded = Exclusions()
    columns, raw_rows = read_table(p, read_excluded)
    if "index" not in columns or "prediction" not in columns:
        raise InputError(f"{p}: not a VLMEvalKit prediction file (needs index and prediction columns; has {columns})")
    stem = p.stem
    _, dataset = split_stem(stem, dataset)
    side_paths = [Path(s) for s in sidecars] if sidecars else []
    if search_sidecars:
        side_paths += [s for s in find_sidecars(p, stem) if s not in side_paths]
    table = PredictionTable(path=p, stem=stem, dataset=dataset, rows=[], columns=columns, sidecars=side_paths,
                            n_read=len(raw_rows) + read_excluded.total, excluded=read_excluded)
    by_index = read_sidecars(side_paths, table.excluded)
    sources = {"embedded": 0, "repaired": 0, "sidecar": 0}
    seen: set[str] = set()
    for raw in raw_rows:
        index = _index_text(raw.get("index"))
        if not index:
            table.excluded.add("index_missing")
            continue
        if index in seen:
            table.excluded.add("duplicate_index", index)
            continue
        seen.add(index)
        flags: list[str] = []
        text = "" if raw.get("prediction") is None else str(raw.get("prediction"))
        record = _parse_record(raw.get("extra_records"))
        repaired = _repair_prediction(text)
        if repaired == {}:
            table.excluded.add("corrupted_prediction", index)
            continue
        if repaired is not None:
            text = "" if repaired.get("prediction") is None else str(repaired["prediction"])
            record = _parse_record(repaired.get("extra_records"))
            flags.append(FLAG_RESUME_REPAIRED)
            table.repaired.add(FLAG_RESUME_REPAIRED, index)
        if INFER_FAIL_MARKER in text:
            table.excluded.add("inference_failed", index)
            continue
        fingerprint = prediction_sha1(text)
        if record is not None and record.get("id") not in (None, index):
            record = None  # an embedded record of another row: fall back to the sidecar
            flags.append("embedded_record_index_mismatch")
        if record is not None and _fingerprint(record) not in (None, fingerprint):
            record = None
            flags.append("embedded_record_prediction_mismatch")
        if record is not None:
            sources["repaired" if repaired is not None else "embedded"] += 1
        else:
            candidates = by_index.get(index, [])
            matching = [r for r in candidates if _fingerprint(r) == fingerprint]
            if matching:
                record = matching[-1]
                flags.append(FLAG_FROM_SIDECAR)
                sources["sidecar"] += 1
            elif candidates:
                table.excluded.add("record_prediction_mismatch", index)
                continue
            else:
                table.excluded.add("no_logprob_record", index)
                continue
        failed = [f for f in record.get("flags", []) if f in CAPTURE_FAILURE_FLAGS]
        if record.get("logprobs") is None and failed:
            table.excluded.add(failed[0], index)
            continue
        row = PredictionRow(index=index, prediction=text, columns=raw, record=record, flags=flags)
        table.rows.append(row)
    table.record_sources = sources
    return table


#: What a capture failure flag means, for messages (judgecp.adapters.capture.generate.CAPTURE_FAILURE_FLAGS).
CAPTURE_FAILURES = {
    "no_answer_letter": "the model generated none of the row's option letters",
    "no_capture": "the model decodes outside transformers' generate",
    "beam_search": "beam search has no per-token logprobs to keep",
    "api_no_logprobs": "the API returned no logprobs",
    "no_tokenizer": "the model's tokenizer was not found",
}


def _why_no_records(table: PredictionTable) -> str:
    """Why no row of ``table`` has a usable logprob record: what the run really lacks."""
    found = sum(table.record_sources.values())
    counts = {e["reason"]: int(e["count"]) for e in table.excluded.to_json()}
    failed = {r: c for r, c in counts.items() if r in CAPTURE_FAILURES}
    if found or failed:
        what = "; ".join(f"{r} {c}: {CAPTURE_FAILURES[r]}" for r, c in failed.items()) or \
            ", ".join(f"{r}: {c}" for r, c in counts.items())
        return (f"its {found} logprob record(s) (an -lp run's) are all unusable ({what}), so there are no "
                "option logprobs to read")
    if table.sidecars:
        names = ", ".join(s.name for s in table.sidecars)
        mismatched = counts.get("record_prediction_mismatch", 0)
        if mismatched:
            return (f"the sidecar ({names}) holds records of other predictions than this file's "
                    f"(record_prediction_mismatch: {mismatched}): the file was rewritten after that run")
        return f"no row has a logprob record: the sidecar ({names}) has none for this file's row indices"
    return ("no row has a logprob record and no sidecar was found beside it (VLMEvalKit's own "
            "multiple-choice benchmarks get them from a `<model>-lp` run started with `judgecp vlmeval`)")


def _row_flags(table: PredictionTable, row: PredictionRow, *, count: bool = True) -> list[str]:
    """The reader's and the capture's flags of a row, counted in ``table.flags`` for the kinds whose
    core reader does not count record flags (all but Likert)."""
    assert row.record is not None
    flags = [*row.flags, *(str(f) for f in row.record.get("flags", []))]
    for flag in flags if count else ():
        table.flags.add(flag, row.index)
    return flags


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _free(name: str | None, value: Any) -> dict[str, Any] | None:
    """A group column also in ``meta`` under its own name, so ``--group``/``--mondrian`` can name it."""
    return {name: value} if name and name not in FIELDS else None


def _meta(spec: JudgeSpec, columns: dict[str, Any], group: Any) -> dict[str, Any] | None:
    """A Likert record's ``meta``: the group column (:func:`_free`) and the unbinned label, if the spec has one."""
    unbinned = _free(spec.continuous_label, columns.get(spec.continuous_label)) if spec.continuous_label else None
    return {**(_free(spec.group, group) or {}), **(unbinned or {})} or None


def likert_records(
    table: PredictionTable, spec: JudgeSpec, label_scale: LabelScale | None = None
) -> list[dict[str, Any]]:
    """``judgecp.record/1`` score records of the table's rows.

    With ``label_scale`` the label is the spec's ``continuous_label`` column
    (Polaris: ``score_mean``), on that scale, and the records say so; that
    column is in every record's ``meta`` too (post hoc: ``--label score_mean
    --label-scale 0:1``).
    """
    if get_kind(spec.kind).reader.record_shape != "score":
        raise InputError(f"{spec.key}: kind {spec.kind!r} is not a judge of scores")
    task, judge, records = table.dataset or table.record_dataset(), table.record_model(), []
    label = spec.continuous_label if label_scale is not None and spec.continuous_label else spec.label
    for row in table.rows:
        assert row.record is not None
        group = row.columns.get(spec.group) if spec.group else None
        records.append(score_record(
            row.index, label=row.columns.get(label), logprobs=row.record.get("logprobs"),
            prediction=row.record.get("prediction"), scale=(spec.scale.minimum, spec.scale.maximum), judge=judge,
            task=task, group=group, flags=_row_flags(table, row, count=False),
            meta=_meta(spec, row.columns, group), label_scale=None if label_scale is None else label_scale.to_json()))
    return records


def pairwise_records(table: PredictionTable, spec: JudgeSpec, group: str | None = None) -> list[dict[str, Any]]:
    """``judgecp.record/1`` pair records, one per row (``label``: the human preference in the original order;
    an order outside the core's names stays, for the core to count; blank is ``fwd``)."""
    task, judge, records = table.dataset or table.record_dataset(), table.record_model(), []
    for row in table.rows:
        assert row.record is not None
        lp, value, order = row.record.get("logprobs") or {}, row.columns.get(group or ""), row.columns.get("order")
        text = str(order or "").strip().lower()
        records.append(pair_record(
            row.index, pair_id=_text(row.columns.get("pair_id")), label=row.columns.get(spec.label),
            order="rev" if text in ORDERS_REV else "fwd" if text in ORDERS_FWD or not text else order,
            logprobs={letter: lp.get(letter) for letter in ("A", "B")}, prediction=row.record.get("prediction"),
            judge=judge, task=task, group=value, flags=_row_flags(table, row), meta=_free(group, value)))
    return records


def _option_columns(table: PredictionTable) -> bool:
    return "answer" in table.columns and sum(1 for letter in LETTERS if letter in table.columns) >= 2


def load_option_table(dataset: str, lmu_root: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """``index -> {A.., answer, category}`` from ``$LMUData/<dataset>.tsv`` (images are not kept).

    For prediction files that lack the option columns. The TSV is streamed
    with the csv module, so its base64 images cost reading time only.
    """
    import os
    import sys

    root = Path(lmu_root) if lmu_root is not None else Path(os.environ.get("LMUData") or Path.home() / "LMUData")
    path = root / f"{dataset}.tsv"
    if not path.is_file():
        raise InputError(
            f"the prediction file has no option columns (A, B, ...) and answer, and {path} does not exist; "
            "set $LMUData to VLMEvalKit's data folder"
        )
    csv.field_size_limit(sys.maxsize)
    keep = {*LETTERS, "answer", "category", "index"}
    out: dict[str, dict[str, Any]] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        for raw in csv.DictReader(fh, delimiter="\t"):
            row = {k: v for k, v in raw.items() if k in keep and v not in (None, "")}
            out[_index_text(row.get("index"))] = row
    return out


def option_records(
    table: PredictionTable,
    *,
    variations: bool = False,
    dataset: str | None = None,
    model: str | None = None,
    lmu_root: str | Path | None = None,
) -> list[dict[str, Any]]:
    """``judgecp.record/1`` choice records of the table's rows (``variations``, PARC: with ``source_id``,
    ``variation``, ``family``).

    A row's options are its non-empty ``A``..``Z`` columns and its answer key
    the ``answer`` column (comma-separated letters for several correct
    options); the logprobs are the record's, restricted to those options (an
    option without one: the core's ``option_logprob_missing``; a key naming
    a letter that is not an option: ``answer_not_an_option``). The
    prediction is the letter the model generated. ``dataset`` and ``model``
    label the records (defaults: from the records).
    """
    dataset = dataset or table.dataset or table.record_dataset() or ""
    model = model or table.record_model() or ""
    if table.dataset is None and dataset:
        table.dataset = dataset
    lookup: dict[str, dict[str, Any]] | None = None
    if _option_columns(table):
        table.options_source = "prediction file"
    else:
        if not dataset:
            raise InputError(f"{table.path}: no option columns, and no dataset name to find its TSV by")
        lookup = load_option_table(dataset, lmu_root)
        table.options_source = f"{dataset}.tsv in $LMUData"
    records = []
    for row in table.rows:
        assert row.record is not None
        flags = _row_flags(table, row)
        cols = row.columns if lookup is None else lookup.get(row.index, {})
        if lookup is not None and not cols:
            table.excluded.add("row_not_in_dataset_tsv", row.index)
            continue
        options = [letter for letter, _ in row_options(cols)]
        lp = row.record.get("logprobs") or {}
        if variations:
            # a variation named otherwise becomes <family>-<name> (flag variation_renamed), as the core reads PARC
            variation = variation_name(str(row.columns.get("variation") or ""), row.columns.get("family"),
                                       table.flags, row.index)
            where = {"task": row.columns.get("source_dataset") or dataset, "source_id": row.columns.get("source_id"),
                     "variation": variation, "family": row.columns.get("family"), "group": variation}
        else:
            where = {"task": dataset, "group": cols.get("category") if _text(cols.get("category")) else None}
        records.append(
            choice_record(
                row.index,
                options=options,
                label=to_list(cols.get("answer")),
                logprobs={k: lp[k] for k in options if k in lp},
                prediction=row.record.get("prediction"),
                judge=model,
                flags=flags,
                meta=_free("category", where["group"]) if where["group"] is not None else None,
                **where,
            )
        )
    return records
