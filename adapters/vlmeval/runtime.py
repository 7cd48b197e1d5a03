"""State shared between judgecp's datasets and models during a VLMEvalKit run.

* :data:`PROMPTS` maps a built prompt to its row index (and the row's option
  letters). VLMEvalKit calls ``model.generate(message, dataset)`` without the
  row; judgecp's datasets register every prompt they build
  (``force_use_dataset_prompt`` makes VLMEvalKit use them), and the
  capturing model looks its message up, so a record always carries the
  ``index`` of its row. For VLMEvalKit's own multiple-choice datasets the
  launcher marks the dataset (:func:`mark_mcq`) and wraps its
  ``build_prompt``; the ``-lp`` model wraps its own ``build_prompt`` (used
  when the model has a custom prompt for the dataset) the same way.
* The *sidecar*: every record is also appended, as one JSON line, to
  ``<run dir>/<model>_<dataset>_lprecords.jsonl`` (``..._lprecords_r<rank>.jsonl``
  under torchrun). VLMEvalKit's ``--reuse`` rewrites the prediction file from
  its ``prediction`` column alone, losing ``extra_records``; the sidecar
  survives, and the prediction reader matches its records to rows by index
  and prediction fingerprint. The run directory comes from the launcher
  (it wraps ``vlmeval.inference.infer_data``), or from
  ``$JUDGECP_VLMEVAL_SIDECAR_DIR``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.specs import MCQ_KIND
from judgecp.data.choice import LETTERS, row_options

log = logging.getLogger("judgecp.vlmeval")

SIDECAR_TAG = "_lprecords"
ENV_SIDECAR_DIR = "JUDGECP_VLMEVAL_SIDECAR_DIR"


def message_key(message: Any) -> str:
    """A stable fingerprint of a VLMEvalKit message (list of ``{type, value}`` dicts or text)."""
    if isinstance(message, str):
        parts: Any = [["text", message]]
    elif isinstance(message, dict):
        parts = [[str(message.get("type")), str(message.get("value"))]]
    else:
        parts = [
            [str(m.get("type")), str(m.get("value"))] if isinstance(m, dict) else ["text", str(m)]
            for m in message
        ]
    return hashlib.sha1(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()


class PromptIndex:
    """Built prompt -> row index (and details of the row), per dataset.

    Thread-safe (API models generate in threads). Two rows with the same
    prompt (same image file and text) are handed out in order; a message
    asked for again after all were handed out (a retried generation) gets
    the last one. ``meta`` is what the record builder needs to know about the
    row, e.g. ``{"letters": ["A", "B", "C"]}`` for a multiple-choice row.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._indices: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._claimed: dict[tuple[str, str], int] = defaultdict(int)
        self._meta: dict[tuple[str, str], dict[str, Any]] = {}

    def register(self, dataset: str, message: Any, index: Any, meta: dict[str, Any] | None = None) -> None:
        key = (dataset, message_key(message))
        with self._lock:
            if str(index) not in self._indices[key]:
                self._indices[key].append(str(index))
            if meta is not None:
                self._meta[(dataset, str(index))] = meta

    def claim_entry(self, dataset: str | None, message: Any) -> tuple[str | None, dict[str, Any]]:
        """The index of the row this message was built for (``None`` if unknown) and its ``meta``."""
        if dataset is None:
            return None, {}
        key = (dataset, message_key(message))
        with self._lock:
            indices = self._indices.get(key)
            if not indices:
                return None, {}
            n = self._claimed[key]
            self._claimed[key] = n + 1
            index = indices[min(n, len(indices) - 1)]
            return index, dict(self._meta.get((dataset, index), {}))

    def clear(self) -> None:
        with self._lock:
            self._indices.clear()
            self._claimed.clear()
            self._meta.clear()


PROMPTS = PromptIndex()

_mcq_lock = threading.Lock()
_MCQ_DATASETS: set[str] = set()


def mark_mcq(dataset_name: str) -> None:
    """Capture option-letter logprobs for this VLMEvalKit multiple-choice dataset (set by the launcher)."""
    with _mcq_lock:
        _MCQ_DATASETS.add(dataset_name)


def is_mcq(dataset_name: str | None) -> bool:
    with _mcq_lock:
        return dataset_name is not None and dataset_name in _MCQ_DATASETS


def row_meta(line: Any) -> dict[str, Any]:
    """What a record builder needs to know about a multiple-choice row: its option letters."""

    return {"letters": [letter for letter, _ in row_options(line)]}


def register_prompt(dataset: str, message: Any, line: Any) -> None:
    """Register a built prompt of a multiple-choice row (index and option letters) for the capture."""
    try:
        index = line["index"]
    except (KeyError, TypeError, IndexError):
        return
    PROMPTS.register(dataset, message, index, row_meta(line))


def prediction_sha1(text: str | None) -> str:
    """Fingerprint of a prediction as VLMEvalKit stores it (line ends and outer space normalised)."""
    norm = "" if text is None else str(text).replace("\r\n", "\n").strip()
    return hashlib.sha1(norm.encode("utf-8")).hexdigest()


def sidecar_name(model_name: str, dataset_name: str, rank: int = 0, world_size: int = 1) -> str:
    suffix = f"_r{rank}" if world_size > 1 else ""
    return f"{model_name}_{dataset_name}{SIDECAR_TAG}{suffix}.jsonl"


class _RunContext:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.work_dir: Path | None = None
        self.model_name: str | None = None
        self.warned = False


_RUN = _RunContext()


@contextmanager
def run_context(work_dir: str | Path, model_name: str) -> Iterator[None]:
    """Set the run directory and model name the sidecars are written under."""
    with _RUN.lock:
        saved = (_RUN.work_dir, _RUN.model_name)
        _RUN.work_dir, _RUN.model_name = Path(work_dir), model_name
    try:
        yield
    finally:
        with _RUN.lock:
            _RUN.work_dir, _RUN.model_name = saved


def _rank() -> tuple[int, int]:
    try:
        return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 0, 1


def sidecar_target(model_name: str | None, dataset_name: str) -> Path | None:
    """Where this process appends the records of ``dataset_name`` (``None``: nowhere known)."""
    with _RUN.lock:
        work_dir, run_model = _RUN.work_dir, _RUN.model_name
    if work_dir is None and os.environ.get(ENV_SIDECAR_DIR):
        work_dir = Path(os.environ[ENV_SIDECAR_DIR])
    name = run_model or model_name
    if work_dir is None or not name:
        if not _RUN.warned:
            _RUN.warned = True
            log.warning(
                "judgecp: no run directory known (start runs with `judgecp vlmeval ...` or set %s); "
                "logprob records are kept in the prediction file's extra_records column only, "
                "which VLMEvalKit's --reuse can drop",
                ENV_SIDECAR_DIR,
            )
        return None
    rank, world = _rank()
    return work_dir / sidecar_name(name, dataset_name, rank, world)


_write_lock = threading.Lock()


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one record as a JSON line (flushed, so a crash keeps what was written), with ``meta.written_at``."""
    written_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    line = json.dumps({**record, "meta": {**(record.get("meta") or {}), "written_at": written_at}},
                      ensure_ascii=False, allow_nan=False)
    with _write_lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()


def capture_target(spec: Any, dataset: str | None) -> str | None:
    """The kind of record a capturing model writes for ``dataset`` (``None``: pass the call through)."""

    if dataset is None:
        return None
    return spec.kind if spec is not None else (MCQ_KIND if is_mcq(dataset) else None)


def row_letters(meta: dict[str, Any], spec: Any) -> list[str]:
    """The letters a row's answer is read among: the row's options, the spec's verdict letters, or A-Z."""

    return list(meta.get("letters") or (spec.letters if spec is not None else ()) or LETTERS)


def deliver(record: dict[str, Any], text: str, *, spec: Any, dataset: str, index: str | None, model: str) -> Any:
    """Label a judge output with its row (``id``: the row's index, ``task``: the dataset, ``judge``: the model,
    ``meta.prediction_sha1``: the prediction's fingerprint), append it to the sidecar, and return VLMEvalKit's
    prediction: ``{"prediction", "extra_records"}`` for judgecp's datasets, plain text for VLMEvalKit's own."""
    if index is not None:
        record["id"] = str(index)
    record.update(
        task=dataset, judge=model, meta={**(record.get("meta") or {}), "prediction_sha1": prediction_sha1(text)}
    )
    target = sidecar_target(model, dataset)
    if target is not None and index is not None:
        append_record(target, record)
    if spec is None:
        return text  # VLMEvalKit's own benchmark: plain prediction, the record is in the sidecar
    return {"prediction": text, "extra_records": json.dumps(record, ensure_ascii=False, allow_nan=False)}
