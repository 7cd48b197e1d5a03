"""The judgecp record, ``judgecp.record/1``: the one currency between the harnesses and the core.

A record is one judgment as a JSON object. Three shapes:

* ``score``: a rating on a scale (Likert judges). ``logprobs`` maps the
  scale's labels (``"1"``..``"5"``) to log P(label) at the score position,
  ``prediction`` is the judge's own (parsed) score, ``label`` the human score
  (on ``label_scale`` ``[LO, HI]`` when given: continuous labels).
* ``pair``: one judgment of a pair of responses in one order (``pair_id``,
  ``order`` ``fwd``/``rev``). ``logprobs`` maps ``"A"``/``"B"`` to the
  log-probabilities of the verdict letters *as shown in this order*;
  ``label`` is the human preference in the *original* order (``"A"``: the
  response shown first in the forward prompt; ``"tie"`` and anything else
  are counted, not used).
* ``choice``: a multiple-choice answer (multiple-choice benchmarks, PARC).
  ``options`` are the option letters in display order, ``logprobs`` maps
  each to its log-probability, ``prediction`` is the model's answer,
  ``label`` the list of correct letters; PARC records add ``source_id`` (the
  original question) and ``variation`` (``O`` for the original prompt).

Every shape has ``schema``, ``shape``, ``id`` (unique in a set of records),
and optionally ``judge`` (the model's identity), ``prompt`` (the prompt or
prompt-set entry), ``task`` (benchmark or data set), ``group`` (a stratum for
per-group tables and Mondrian calibration), ``flags`` (what capture or
extraction had to do; kept records), ``exclude`` (a reason the record cannot
be used, set before the core sees it: counted, never dropped) and ``meta``
(free, JSON-serialisable; its keys are usable as fields by name).

``label`` may be ``null`` or absent: an unlabeled record (a nightly run's
outputs) is valid; evaluation needs labels and counts the unlabeled ones.

JSON has no NaN or infinity: a log-probability that is not finite is written
as the string ``"nan"``, ``"inf"`` or ``"-inf"`` and read back as that number.

A *judge output* is a record the model side writes without the document's
fields (``id``, ``label``, ...): what a capturing model returns or logs
(:func:`judge_output`); the task or reader completes it with
:func:`complete`. The JSON Schema is ``record.schema.json`` beside this
module (:func:`schema_path`); docs/records.md documents every field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from typing_extensions import Unpack

SCHEMA = "judgecp.record/1"
Shape = Literal["score", "pair", "choice"]
SHAPES: tuple[str, ...] = ("score", "pair", "choice")
ORDERS = ("fwd", "rev")

#: Fields every shape may carry, in the order records are written.
COMMON_FIELDS = ("judge", "prompt", "task", "group", "label", "logprobs", "prediction", "flags", "exclude", "meta")
#: Fields of one shape only.
SHAPE_FIELDS: dict[str, tuple[str, ...]] = {
    "score": ("scale", "label_scale"),
    "pair": ("pair_id", "order", "verbalized_confidence", "annotator_agreement"),
    "choice": ("options", "source_id", "variation", "family"),
}
REQUIRED: dict[str, tuple[str, ...]] = {"score": (), "pair": ("pair_id", "order"), "choice": ("options",)}
#: Every top-level field name (a ``meta`` key with one of these names keeps its ``meta.`` prefix).
FIELDS = ("schema", "shape", "id", *COMMON_FIELDS, *sorted({f for v in SHAPE_FIELDS.values() for f in v}))


def schema_path() -> Path:
    """The JSON Schema file of ``judgecp.record/1`` (shipped inside the package)."""
    return Path(__file__).with_name("record.schema.json")


def json_number(value: Any) -> float | str | None:
    """A log-probability as JSON allows: a finite float, ``"nan"``/``"inf"``/``"-inf"``, or ``None``."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else str(number)


def json_logprobs(logprobs: Mapping[Any, Any] | None) -> dict[str, float | str | None] | None:
    """``{token: log-probability}`` with string keys and JSON-safe numbers."""
    if logprobs is None:
        return None
    return {str(k): json_number(v) for k, v in logprobs.items()}


def likeliest(logprobs: Mapping[str, Any]) -> str | None:
    """The label with the highest log-probability that is not NaN or None (the judge's direct answer), or ``None``."""
    finite = {k: float(v) for k, v in logprobs.items() if v is not None and not math.isnan(float(v))}
    return max(finite, key=finite.__getitem__) if finite else None


class RecordFields(TypedDict, total=False):
    """The optional fields every shape's builder takes by keyword (the module docstring says what each means)."""

    judge: Any
    prompt: Any
    task: Any
    group: Any
    flags: Iterable[str]
    exclude: str | None
    meta: Mapping[str, Any] | None


def _common(
    shape: str,
    record_id: Any,
    *,
    label: Any,
    logprobs: Mapping[Any, Any] | None,
    prediction: Any,
    judge: Any = None,
    prompt: Any = None,
    task: Any = None,
    group: Any = None,
    flags: Iterable[str] = (),
    exclude: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {"schema": SCHEMA, "shape": shape}
    if record_id is not None:
        record["id"] = str(record_id)
    for name, value in (("judge", judge), ("prompt", prompt), ("task", task), ("group", group)):
        if value is not None:
            record[name] = str(value)
    record["label"] = label
    record["logprobs"] = json_logprobs(logprobs)
    record["prediction"] = prediction
    record["flags"] = [str(f) for f in flags]
    record["exclude"] = exclude
    if meta:
        record["meta"] = dict(meta)
    return record


def score_record(
    record_id: Any,
    *,
    label: Any = None,
    logprobs: Mapping[Any, Any] | None = None,
    prediction: int | None = None,
    scale: Sequence[int] | None = None,
    label_scale: Sequence[float] | None = None,
    **fields: Unpack[RecordFields],
) -> dict[str, Any]:
    """A ``score`` record (``label``: the human score, raw: the core decides whether it is on the scale).

    ``label_scale``: ``[LO, HI]``, the range ``label`` is given on when it is
    not the judge's ``scale`` (averaged scores on [0, 1]); the core maps it.
    """
    record = _common("score", record_id, label=label, logprobs=logprobs, prediction=prediction, **fields)
    if scale is not None:
        record["scale"] = [int(scale[0]), int(scale[1])]
    if label_scale is not None:
        record["label_scale"] = [float(label_scale[0]), float(label_scale[1])]
    return record


def pair_record(
    record_id: Any,
    *,
    pair_id: Any,
    order: str,
    label: Any = None,
    logprobs: Mapping[Any, Any] | None = None,
    prediction: str | None = None,
    **fields: Unpack[RecordFields],
) -> dict[str, Any]:
    """A ``pair`` record: one order of one pair (``label``: the preference in the original order)."""
    record = _common("pair", record_id, label=label, logprobs=logprobs, prediction=prediction, **fields)
    record["pair_id"] = str(pair_id)
    record["order"] = order
    return record


def choice_record(
    record_id: Any,
    *,
    options: Sequence[str],
    label: Sequence[str] | None = None,
    logprobs: Mapping[Any, Any] | None = None,
    prediction: str | None = None,
    source_id: Any = None,
    variation: str | None = None,
    family: str | None = None,
    **fields: Unpack[RecordFields],
) -> dict[str, Any]:
    """A ``choice`` record (``label``: the correct letters; PARC adds ``source_id`` and ``variation``)."""
    record = _common("choice", record_id, label=None if label is None else [str(x) for x in label],
                     logprobs=logprobs, prediction=prediction, **fields)
    record["options"] = [str(o) for o in options]
    for name, value in (("source_id", source_id), ("variation", variation), ("family", family)):
        if value is not None:
            record[name] = str(value)
    return record


def judge_output(
    shape: Shape,
    *,
    logprobs: Mapping[Any, Any] | None,
    prediction: Any = None,
    flags: Iterable[str] = (),
    **meta: Any,
) -> dict[str, Any]:
    """What a capturing model returns for one generation: the judge's fields only.

    ``meta`` keeps how they were found (the generated ``text``, the extractor's
    ``stage`` and ``position``, ``n_tokens``, ...). :func:`complete` adds the
    document's fields.
    """
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    return _common(shape, None, label=None, logprobs=logprobs, prediction=prediction, flags=flags, meta=meta)


def complete(output: Mapping[str, Any], record_id: Any, **fields: Any) -> dict[str, Any]:
    """A judge output with the document's fields (``id`` and any of :data:`FIELDS`) added.

    Flags are concatenated (the output's first), ``meta`` merged (the
    document's keys win); other fields given here replace the output's.
    """
    unknown_fields = sorted(set(fields) - set(FIELDS))
    if unknown_fields:
        raise ValueError(f"not record fields: {unknown_fields}; put free fields in meta")
    record = dict(output)
    record["id"] = str(record_id)
    flags = [*record.get("flags", []), *fields.pop("flags", [])]
    meta = {**(record.get("meta") or {}), **(fields.pop("meta", None) or {})}
    for name, value in fields.items():
        if name == "logprobs":
            value = json_logprobs(value)
        record[name] = value
    record["flags"] = flags
    if meta:
        record["meta"] = meta
    return record


def parse_judge_output(raw: Any, shape: str | None = None) -> dict[str, Any] | None:
    """The record (or judge output) in ``raw`` (a dict or its JSON text), or ``None`` when it is not one.

    A plain-text answer (a stock model, or a cached run from one) is not.
    With ``shape``, an output of another shape is not one either.
    """
    obj = raw
    if isinstance(raw, str):
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            return None
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA or obj.get("shape") not in SHAPES:
        return None
    if shape is not None and obj["shape"] != shape:
        return None
    return obj


def problem(record: Any) -> str | None:
    """Why ``record`` is not a usable ``judgecp.record/1`` (a short reason), or ``None``.

    A structural check for readers (the reason becomes a counted exclusion);
    the JSON Schema file says the same in full.
    """
    if not isinstance(record, dict):
        return "record_not_an_object"
    if record.get("schema") != SCHEMA:
        return "record_schema_unknown"
    shape = record.get("shape")
    if shape not in SHAPES:
        return "record_shape_unknown"
    if record.get("id") in (None, ""):
        return "id_missing"
    # A record an adapter excluded (a placeholder for a malformed line, ...) is counted under its own
    # reason by the kind's reader, so empty fields are expected; absent ones are still malformed.
    excluded = isinstance(record.get("exclude"), str) and bool(record["exclude"].strip())
    for name in REQUIRED[shape]:
        value = record.get(name)
        if value is None or (not excluded and value in ("", [])):
            return f"{name}_missing"
    if shape == "pair" and not excluded and record.get("order") not in ORDERS:
        return "order_unknown"
    if not isinstance(record.get("flags", []), list):
        return "flags_not_a_list"
    if record.get("meta") is not None and not isinstance(record["meta"], dict):
        return "meta_not_an_object"
    return None


def flatten(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record with its ``meta`` keys lifted to the top level (``meta.<key>`` where a name is taken).

    This is how records become a table whose columns ``--group``,
    ``--mondrian`` and the per-group tables can name.
    """
    out = {k: v for k, v in record.items() if k != "meta"}
    meta = record.get("meta")
    if isinstance(meta, dict):
        for key, value in meta.items():
            out[key if key not in FIELDS and key not in out else f"meta.{key}"] = value
    return out
