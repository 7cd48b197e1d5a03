"""The per-document record and the judge's JSON response (no lm-eval import).

A Likert record is what ``process_results`` returns for one document and what
the samples file keeps, so every metric can be recomputed offline::

    {"id": "17", "label": "4", "logprobs": {"1": -9.1, ..., "5": -1.9},
     "parsed": 4, "group": "coco", "flags": [], "exclude": null, ...}

``label`` is the dataset's raw label (the core decides whether it is on the
scale), ``flags`` are the extractor's (``no_score`` makes the core exclude the
record), ``exclude`` names a problem found before the judge's numbers could
be used (``image_load_failed``, ``response_not_json``); such a record is
counted as excluded with that reason, never dropped silently. Extra fields
(e.g. ``actor``) can serve as Mondrian groups.

A chain-of-thought judge answers ``generate_until`` with a JSON string
(:func:`judge_response`), because lm-eval keeps ``str()`` of each response in
the samples file.

The other kinds carry what their core readers take (``judgecp evaluate
--kind pairwise|mcq|parc`` reads them as they are):

* pairwise (:func:`pairwise_record`), one per pair and order::

      {"id": "p17/rev", "pair_id": "p17", "order": "rev", "lp_A": -1.9, "lp_B": -0.2,
       "label": "A", "category": "chat", "exclude": null}

  ``label`` is the human preference in the *original* order (``A`` = the
  response shown first in the forward prompt), raw when it is neither
  (``tie``, ``""``: the core counts it);
* multiple choice (:func:`choice_record`), one per item::

      {"id": "ai2d/17", "options": ["A", "B", "C", "D"], "correct": ["B"],
       "logprobs": {"A": -2.1, ...}, "prediction": "B", "dataset": "ai2d",
       "category": "...", "exclude": null}

  and PARC's, the same plus ``source_id``, ``variation``, ``family``
  (optional) and ``model``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from judgecp.exclusions import Exclusions

#: ``format`` field of a judge response; :func:`parse_judge_response` checks it.
RESPONSE_FORMAT = "judgecp.judge_response.v1"

EXCLUDE_IMAGE = "image_load_failed"
EXCLUDE_NOT_JSON = "response_not_json"
EXCLUDE_NOT_RECORDED = "not_recorded"

#: Record keys that are not free-form fields.
RECORD_KEYS = ("id", "label", "logprobs", "parsed", "group", "flags", "exclude")


def judge_response(
    text: str,
    logprobs: Mapping[str, float] | None,
    *,
    parsed: int | None,
    flags: Sequence[str] = (),
    stage: str | None = None,
    position: int | None = None,
) -> str:
    """The JSON string a chain-of-thought judge returns for one generation."""
    return json.dumps(
        {
            "format": RESPONSE_FORMAT,
            "text": text,
            "logprobs": None if logprobs is None else {k: _finite_or_str(v) for k, v in logprobs.items()},
            "parsed": parsed,
            "stage": stage,
            "position": position,
            "flags": list(flags),
        },
        ensure_ascii=False,
    )


def _finite_or_str(value: float) -> float | str:
    """JSON has no NaN/Infinity: keep them as the strings the core reads back as numbers."""
    value = float(value)
    return value if math.isfinite(value) else str(value)


def parse_judge_response(raw: Any) -> dict[str, Any] | None:
    """The response dict, or ``None`` when ``raw`` is not a judgecp judge response.

    A plain-text answer (a stock model, or a cached run from one) is not.
    """
    if isinstance(raw, dict):
        obj = raw
    elif isinstance(raw, str):
        try:
            obj = json.loads(raw)
        except ValueError:
            return None
    else:
        return None
    if not isinstance(obj, dict) or obj.get("format") != RESPONSE_FORMAT:
        return None
    return obj


def likert_record(
    doc_id: Any,
    label: Any,
    logprobs: Mapping[str, float] | None,
    *,
    parsed: int | None = None,
    group: Any = None,
    flags: Iterable[str] = (),
    exclude: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """One document's record (see the module docstring)."""
    record: dict[str, Any] = {
        "id": str(doc_id),
        "label": None if label is None else str(label),
        "logprobs": None if logprobs is None else {k: _finite_or_str(v) for k, v in logprobs.items()},
        "parsed": parsed,
        "group": None if group is None else str(group),
        "flags": list(flags),
        "exclude": exclude,
    }
    for key, value in fields.items():
        if key in RECORD_KEYS:
            raise ValueError(f"record field {key!r} is reserved")
        record[key] = value
    return record


def split_excluded(records: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], Exclusions]:
    """Records the core can read, and the adapter-level exclusions counted by reason."""
    kept: list[dict[str, Any]] = []
    excluded = Exclusions()
    for r in records:
        if r.get("exclude"):
            excluded.add(str(r["exclude"]), r.get("id"))
        else:
            kept.append({k: v for k, v in r.items() if k != "exclude"})
    return kept, excluded


def pairwise_record(
    doc_id: Any,
    pair_id: Any,
    order: str,
    lp_a: float | None,
    lp_b: float | None,
    label: Any,
    *,
    exclude: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """One pairwise document's record (see the module docstring)."""
    return {
        "id": str(doc_id),
        "pair_id": str(pair_id),
        "order": order,
        "lp_A": None if lp_a is None else _finite_or_str(lp_a),
        "lp_B": None if lp_b is None else _finite_or_str(lp_b),
        "label": None if label is None else str(label),
        **fields,
        "exclude": exclude,
    }


def choice_record(
    doc_id: Any,
    options: Sequence[str],
    correct: Sequence[str],
    logprobs: Mapping[str, float] | None,
    prediction: str | None,
    *,
    exclude: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """One multiple-choice (or PARC) document's record (see the module docstring)."""
    return {
        "id": str(doc_id),
        "options": list(options),
        "correct": list(correct),
        "logprobs": None if logprobs is None else {k: _finite_or_str(v) for k, v in logprobs.items()},
        "prediction": prediction,
        **fields,
        "exclude": exclude,
    }


#: Name of the model answering in this process (set by the judgecp models; PARC records carry it).
_model_name: list[str] = []


def set_model_name(name: str | None) -> None:
    """Remember the model's name for the records built in this process (the last one set wins)."""
    _model_name[:] = [str(name)] if name else []


def model_name() -> str:
    """The model's name set by a judgecp model, or ``"model"`` (a stock lm-eval model sets none)."""
    return _model_name[0] if _model_name else "model"


#: The ``judgecp evaluate --kind`` of each record kind.
RECORD_KINDS = ("likert", "pairwise", "mcq", "parc")


def record_kind(value: Any) -> str | None:
    """Which kind of judgecp record ``value`` is (:data:`RECORD_KINDS`), or ``None``."""
    if not isinstance(value, dict) or "id" not in value:
        return None
    if "pair_id" in value and "order" in value:
        return "pairwise"
    if "options" in value and "logprobs" in value:
        return "parc" if "variation" in value else "mcq"
    if "logprobs" in value and "label" in value:
        return "likert"
    return None


def is_likert_record(value: Any) -> bool:
    return record_kind(value) == "likert"


def records_from_samples(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The judgecp records of lm-eval samples files (``samples_<task>_<date>.jsonl``).

    Every metric of a task holds the same record; the first one found on a
    line is taken. Lines without a record are an error naming the file.
    """
    records: list[dict[str, Any]] = []
    for path in paths:
        p = Path(path)
        with p.open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                sample = json.loads(line)
                metrics = sample.get("metrics") or list(sample)
                record = next((sample[m] for m in metrics if record_kind(sample.get(m))), None)
                if record is None:
                    raise ValueError(f"{p}:{lineno}: no judgecp record in this sample; is it a judgecp task?")
                records.append(record)
    return records


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m judgecp.adapters.lm_eval.records SAMPLES.jsonl... -o records.jsonl``.

    Writes the records of lm-eval samples files as a JSONL file that
    ``judgecp evaluate`` reads as it is (the full report: every method, per
    group, diagnostics), and prints the ``--kind`` to give it. Records the
    adapter excluded (unreadable image, response not JSON, ...) are left out
    and counted on stderr; the core counts the rest of the exclusions itself.
    With the task's settings (``--methods naive,lac --seeds 10`` for the
    Likert tasks; the defaults of ``judgecp evaluate --kind pairwise|mcq|parc``
    for the others) the numbers are the ones lm-eval reported.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m judgecp.adapters.lm_eval.records", description=main.__doc__)
    parser.add_argument("samples", nargs="+", help="lm-eval samples_<task>_<date>.jsonl file(s) of one task")
    parser.add_argument("-o", "--output", required=True, help="records JSONL to write")
    args = parser.parse_args(argv)
    records = records_from_samples(args.samples)
    kinds = sorted({record_kind(r) or "" for r in records})
    if len(kinds) > 1:
        raise SystemExit(f"the samples files mix record kinds ({', '.join(kinds)}); export one task at a time")
    # Sorted by id as the aggregation sorts them: the same rows give the same splits.
    kept, excluded = split_excluded(sorted(records, key=lambda r: str(r.get("id"))))
    with Path(args.output).open("w", encoding="utf-8") as handle:
        for record in kept:
            handle.write(json.dumps(record) + "\n")
    kind = kinds[0] if kinds else "likert"
    print(f"{len(kept)} {kind} records written to {args.output}; evaluate them with: "
          f"judgecp evaluate {args.output} --kind {kind}", file=sys.stderr)
    for entry in excluded.to_json():
        print(f"left out before evaluation: {entry['reason']} {entry['count']} (e.g. {', '.join(entry['examples'])})", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
