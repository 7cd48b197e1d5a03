"""Read ensemble input: ``judgecp.record/1`` records, one per (item, prompt).

Each JSONL line is a record (see docs/ensembles.md):

* ``schema: "judgecp.record/1"``; ``shape`` "pair", "choice" or "score" (one
  shape per file); ``judge`` (one judge per file); ``prompt``: the prompt id;
* ``meta.item`` (or the field named by ``item_field``, a dotted path): the
  item the record belongs to; the records of one item are its prompts;
* ``logprobs``: ``{glyph: log-probability}`` over the prompt's answer glyphs;
* ``meta.answer_key`` (or the prompt set's ``answer_key`` for that prompt):
  displayed glyph -> answer in the original order (e.g. ``{"I": "B", "II":
  "A"}`` for a flipped prompt with glyphs I/II). Without one, the answers of
  a pair are the glyphs "A" and "B" (other tokens are ignored), and those of
  a choice or score are all the glyphs;
* ``label``: the human answer in the original order ("A"/"B" for a pair, a
  one-element list of option letters for a choice, an integer for a score),
  or null: unlabeled items are predicted, not fitted on.

Re-keyed log-probabilities are renormalised over the answers. An answer
missing from a record's logprobs (or at -inf) is floored at ``floor`` and
counted; records
with non-finite logprobs, records with ``exclude`` set (the harness's reason,
e.g. ``image_load_failed``: the item is left out), items lacking some
prompts, items without an embedding (when embeddings are used) and malformed
lines are counted exclusions. Conflicting labels, duplicate (item, prompt) pairs, several judges
or shapes are errors naming the line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.base.textfiles import text_lines
from judgecp.data.ensemble.prompts import JudgePrompt

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

RECORD_SCHEMA = "judgecp.record/1"
SHAPES = ("pair", "choice", "score")
DEFAULT_FLOOR = math.log(1e-5)


@dataclass
class EnsembleData:
    """Items x prompts x answers, ready for :class:`~judgecp.stats.ensemble.estimator.PromptEnsemble`."""

    items: list[str]
    prompts: list[str]
    classes: list[str]
    log_probs: FloatArray  #: (items, prompts, classes), normalised
    labels: IntArray  #: (items,) class index, -1 when unlabeled
    embeddings: FloatArray | None  #: (items, dim) or None
    judge: str | None
    shape: str
    exclusions: Exclusions = field(default_factory=Exclusions)
    floored: int = 0  #: answers missing from a record's logprobs, floored

    @property
    def labeled(self) -> NDArray[np.bool_]:
        out: NDArray[np.bool_] = self.labels >= 0
        return out


def _dotted(record: Mapping[str, Any], path: str) -> Any:
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _canonical_label(shape: str, label: Any, where: str) -> str | None:
    if label is None:
        return None
    if shape == "pair":
        if label not in ("A", "B"):
            raise InputError(f"{where}: a pair label must be 'A', 'B' or null, got {label!r}")
        return str(label)
    if shape == "choice":
        if isinstance(label, str):
            return label
        if isinstance(label, list) and len(label) == 1:
            return str(label[0])
        raise InputError(f"{where}: the ensemble needs one correct option per item, got {label!r}")
    try:
        value = float(label)
    except (TypeError, ValueError):
        value = float("nan")
    if isinstance(label, bool) or not value.is_integer():
        raise InputError(f"{where}: a score label must be an integer, got {label!r}")
    return str(int(value))


def iter_jsonl(path: str | Path, exclusions: Exclusions) -> Iterable[tuple[str, dict[str, Any]]]:
    """(``file:line``, record) for each JSON object line; malformed lines are counted."""
    for line_no, line in enumerate(text_lines(path, "a UTF-8 JSONL file of records"), 1):
        if not line.strip():
            continue
        where = f"{path}:{line_no}"
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: a line nested thousands deep
            exclusions.add("malformed JSON line", where)
            continue
        if not isinstance(record, dict):
            exclusions.add("line is not a JSON object", where)
            continue
        yield where, record


def read_ensemble_records(
    source: str | Path | Sequence[Mapping[str, Any]],
    *,
    embeddings: Mapping[str, Sequence[float] | FloatArray] | None = None,
    embedding_field: str | None = "meta.embedding",
    prompt_set: Sequence[JudgePrompt] | None = None,
    item_field: str = "meta.item",
    floor: float = DEFAULT_FLOOR,
    require_embeddings: bool = False,
) -> EnsembleData:
    """Group records into items x prompts (module docstring).

    Parameters
    ----------
    source : path or sequence of dict
        A JSONL file of records, or the records themselves.
    embeddings : mapping, optional
        Item id -> embedding (e.g. from :func:`~judgecp.data.ensemble.embeddings.read_embeddings`);
        takes precedence over ``embedding_field``.
    embedding_field : str or None
        Dotted record field holding the item's embedding when no mapping is given.
    prompt_set : sequence of JudgePrompt, optional
        Supplies ``answer_key`` for records without ``meta.answer_key``.
    item_field : str
        Dotted field tying an item's records together.
    floor : float
        Log-probability for an answer missing from a record or at -inf.
    require_embeddings : bool
        Exclude (and count) items without an embedding instead of returning
        ``embeddings=None`` when none has any.
    """
    exclusions = Exclusions()
    if isinstance(source, (str, Path)):
        if not Path(source).exists():
            raise InputError(f"{source}: no such records file")
        rows: Iterable[tuple[str, Mapping[str, Any]]] = iter_jsonl(source, exclusions)
    else:
        rows = ((f"record {i}", r) for i, r in enumerate(source))
    keys = {p.id: p.answer_key for p in (prompt_set or [])}

    shape: str | None = None
    judges: set[str] = set()
    cells: dict[tuple[str, str], dict[str, float]] = {}
    left_out: set[tuple[str, str]] = set()
    labels: dict[str, str | None] = {}
    record_vectors: dict[str, Any] = {}
    prompt_order: dict[str, None] = {}
    item_order: dict[str, None] = {}
    bad_items: set[str] = set()
    answers: set[str] = set()
    for where, record in rows:
        if record.get("schema") != RECORD_SCHEMA:
            raise InputError(f"{where}: schema must be {RECORD_SCHEMA!r}, got {record.get('schema')!r}")
        rec_shape = record.get("shape")
        if rec_shape not in SHAPES:
            raise InputError(f"{where}: shape must be one of {', '.join(SHAPES)}, got {rec_shape!r}")
        if shape is None:
            shape = rec_shape
        elif rec_shape != shape:
            raise InputError(f"{where}: shape {rec_shape!r} after {shape!r}: one shape per input")
        if record.get("judge") is not None:
            judges.add(str(record["judge"]))
            if len(judges) > 1:
                raise InputError(f"{where}: judges {sorted(judges)}: an ensemble weighs one judge's prompts")
        item, prompt = _dotted(record, item_field), record.get("prompt")
        if item is None:
            raise InputError(f"{where}: no {item_field} (the item this record belongs to)")
        if prompt is None:
            raise InputError(f"{where}: no prompt id")
        item, prompt = str(item), str(prompt)
        if (item, prompt) in cells or (item, prompt) in left_out:
            raise InputError(f"{where}: item {item!r} has prompt {prompt!r} twice")
        if record.get("exclude"):
            # Set before the core saw it (an image that failed to load, ...): the item is left out.
            exclusions.add(f"{record['exclude']} (item left out)", where)
            bad_items.add(item)
            left_out.add((item, prompt))
            prompt_order.setdefault(prompt, None)
            item_order.setdefault(item, None)
            continue
        logprobs = record.get("logprobs")
        if not isinstance(logprobs, Mapping) or not logprobs:
            raise InputError(f"{where}: logprobs must be a non-empty {{glyph: log-probability}} object")
        answer_key = _dotted(record, "meta.answer_key") or keys.get(prompt)
        if answer_key is None:
            glyphs = ("A", "B") if shape == "pair" else tuple(str(g) for g in logprobs)
            answer_key = {g: g for g in glyphs}
        if not any(glyph in logprobs for glyph in answer_key):
            raise InputError(
                f"{where}: logprobs hold none of the answer glyphs {sorted(answer_key)} "
                "(is an answer_key missing?)"
            )
        values: dict[str, float] = {}
        non_finite = False
        for glyph, answer in answer_key.items():
            value = logprobs.get(glyph)
            try:
                number = float("nan") if value is None else float(value)
            except (TypeError, ValueError):
                raise InputError(f"{where}: logprob of {glyph!r} is not a number: {value!r}") from None
            if value is not None and (math.isnan(number) or number > 1e-6):
                non_finite = True
            values[str(answer)] = number
        if non_finite:
            exclusions.add("NaN or positive logprob (item left out)", where)
            bad_items.add(item)
        label = _canonical_label(shape, record.get("label"), where)
        if item in labels and label is not None and labels[item] not in (None, label):
            raise InputError(f"{where}: item {item!r} has labels {labels[item]!r} and {label!r}")
        if labels.get(item) is None:
            labels[item] = label
        if embedding_field is not None and embeddings is None:
            vector = _dotted(record, embedding_field)
            if vector is not None:
                record_vectors[item] = vector
        cells[(item, prompt)] = values
        answers.update(values)
        prompt_order.setdefault(prompt, None)
        item_order.setdefault(item, None)
    if shape is None:
        raise InputError(f"{source if isinstance(source, (str, Path)) else 'records'}: no records")
    if shape == "pair":
        classes = ["A", "B"]
        unknown = sorted(answers - set(classes))
        if unknown:
            raise InputError(
                f"pair answers must be 'A'/'B' after re-keying, got {unknown[0]!r} (is an answer_key missing?)"
            )
    elif shape == "score":
        classes = sorted(answers, key=lambda a: float(a))
    else:
        classes = sorted(answers)
    prompts = list(prompt_order)
    table = dict(embeddings) if embeddings is not None else record_vectors
    use_embeddings = require_embeddings or bool(table)

    kept: list[str] = []
    rows_lp: list[FloatArray] = []
    floored = 0
    for item in item_order:
        if item in bad_items:
            continue
        missing = [p for p in prompts if (item, p) not in cells]
        if missing:
            exclusions.add(f"item lacks some prompts (e.g. {missing[0]})", item)
            continue
        if use_embeddings and item not in table:
            exclusions.add("item has no embedding", item)
            continue
        grid = np.empty((len(prompts), len(classes)))
        for a, prompt in enumerate(prompts):
            values = cells[(item, prompt)]
            for c, answer in enumerate(classes):
                value = values.get(answer, float("nan"))
                if math.isnan(value) or value == -math.inf:
                    value = floor
                    floored += 1
                grid[a, c] = value
        rows_lp.append(grid - logsumexp(grid, axis=1, keepdims=True))
        kept.append(item)
    if not kept:
        raise InputError("no item has every prompt (and an embedding, when embeddings are used)")
    class_index = {c: i for i, c in enumerate(classes)}
    label_array = np.full(len(kept), -1, dtype=np.intp)
    for j, item in enumerate(kept):
        label = labels.get(item)
        if label is not None:
            if label not in class_index:
                raise InputError(f"item {item!r}: label {label!r} is not among the answers {classes}")
            label_array[j] = class_index[label]
    emb = None
    if use_embeddings:
        try:
            emb = np.array([np.asarray(table[item], dtype=float) for item in kept])
        except ValueError as exc:
            raise InputError(f"embeddings must all be vectors of one length ({exc})") from exc
        if emb.ndim != 2:
            raise InputError("embeddings must all be vectors of one length")
    return EnsembleData(
        items=kept,
        prompts=prompts,
        classes=classes,
        log_probs=np.stack(rows_lp),
        labels=label_array,
        embeddings=emb,
        judge=next(iter(judges)) if judges else None,
        shape=shape,
        exclusions=exclusions,
        floored=floored,
    )
