"""Original multiple-choice VQA items from any source, for the PARC variation builder.

Sources (:func:`load_originals`):

* a JSONL of originals in the variation format itself (``docs/parc_format.md``:
  ``variation: "O"``, ``image`` a path or a list of two paths, relative to
  the file); lines of other variations are counted (``not_an_original``);
* any table (CSV/TSV, JSONL/JSON, Parquet) with a question, options, an
  answer and image columns: options as one column (a list, a
  ``{letter: text}`` object or its JSON text) or as letter columns ``A``,
  ``B``, ... (MMBench and VLMEvalKit TSVs); the answer as letters or as an
  option's text; images as paths, base64 text or ``{"bytes", "path"}``
  cells, one column or two (``image_1``/``image_2``, ``left``/``right``).
  CompBench's annotation files (``image_1``, ``image_2``, ``question``,
  ``answer`` "Left"/"Right", no options) get the options Left and Right;
* a local directory: its ``originals.jsonl`` or ``variations.jsonl``, else a
  copy of a hub dataset's parquet files (``<split>-*.parquet``), else its one
  table file;
* a Hugging Face hub dataset id, through ``datasets`` (the ``lm-eval``
  extra): ``mmbench`` is ``lmms-lab/MMBench_EN``, split ``dev`` (MMBench's
  val split, PARC A7.4); ``HuggingFaceM4/MMBench`` (split ``validation``)
  holds the same items with base64 images.

A bare numeric id (MMBench's ``index``) becomes ``<dataset>-<n>`` (ids stay unique across datasets).

Items left out, counted by reason: ``malformed_json_line``,
``not_an_original``, ``question_missing``, ``options_invalid`` (fewer than two
non-empty options), ``answer_missing``, ``answer_not_an_option``,
``image_missing`` (no image, or a path that is not a file),
``image_unreadable``, ``duplicate_id``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from judgecp.base.errors import InputError, require
from judgecp.base.exclusions import Exclusions
from judgecp.base.textfiles import read_text
from judgecp.data.choice import LETTERS, has_text
from judgecp.data.datasources import from_the_hub
from judgecp.data.tables import read_jsonl, read_table
from judgecp.workflows.parc_build.images import image_of

#: What to give instead of a hub id when the hub cannot be reached (the error says it).
OFFLINE_ALTERNATIVE = ("without the hub, give a local source instead: a folder with a copy of the hub's parquet files "
                       "(<split>-*.parquet, --split), or a table such as MMBench's TSV (docs/parc_build.md)")
#: Shortcuts for hub datasets: name -> (hub id, config, split, dataset name in the variation files).
HUB_PRESETS = {
    "mmbench": ("lmms-lab/MMBench_EN", None, "dev", "mmbench"),
}

ID_COLUMNS = ("source_id", "id", "index", "question_id", "qid")
QUESTION_COLUMNS = ("question", "prompt", "text")
OPTION_COLUMNS = ("options", "choices")
ANSWER_COLUMNS = ("correct", "answer", "label", "gt_answer")
IMAGE_COLUMNS = ("image", "images", "image_path", "img", "img_path")
PAIR_COLUMNS = (("image_1", "image_2"), ("left", "right"), ("image_left", "image_right"), ("image1", "image2"))


@dataclass
class Original:
    """One original item: ``images`` are PIL images or file paths; ``image_refs`` name them (VS-E's map)."""

    source_id: str
    dataset: str
    question: str
    options: dict[str, str]
    correct: list[str]
    images: list[Any]
    image_refs: list[str]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def two_images(self) -> bool:
        return len(self.images) == 2


@dataclass
class Originals:
    items: list[Original]
    excluded: Exclusions
    n_read: int
    description: dict[str, Any]


def _options(row: Mapping[str, Any], column: str | None) -> dict[str, str] | None:
    raw: Any = None
    for name in ((column,) if column else OPTION_COLUMNS):
        if name in row and has_text(row[name]):
            raw = row[name]
            break
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if isinstance(raw, Mapping):
        return {str(k).strip(): str(v).strip() for k, v in raw.items() if has_text(v)}
    if isinstance(raw, (list, tuple)) or (raw is not None and hasattr(raw, "tolist")):
        values = [v for v in (raw.tolist() if hasattr(raw, "tolist") else raw) if has_text(v)]
        return {LETTERS[i]: str(v).strip() for i, v in enumerate(values)}
    if column is None:  # letter columns, MMBench style: A, B, C, ... until the first absent one
        found: dict[str, str] = {}
        for letter in LETTERS:
            if letter not in row:
                break
            if has_text(row[letter]):
                found[letter] = str(row[letter]).strip()
        return found or None
    return None


def _answer(raw: Any, options: Mapping[str, str]) -> list[str] | None:
    """Letters from a letter, a list of letters, "A,B", or an option's text (case-insensitive)."""
    if not has_text(raw):
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                raw = json.loads(text)
            except ValueError:
                pass
    values = [str(v).strip() for v in raw] if isinstance(raw, (list, tuple)) else re.split(r"\s*,\s*", str(raw).strip())
    by_text = {v.lower(): k for k, v in options.items()}
    out = []
    for value in values:
        if value in options:
            out.append(value)
        elif value.lower() in by_text:
            out.append(by_text[value.lower()])
        elif str(raw).strip().lower() in by_text:  # an option text with a comma in it
            return [by_text[str(raw).strip().lower()]]
        else:
            return []
    return list(dict.fromkeys(out))


def _image_cells(row: Mapping[str, Any], column: str | None) -> list[Any]:
    if column:
        names = [c.strip() for c in column.split(",")]
        cells: list[Any] = []
        for name in names:
            cell = row.get(name)
            cells.extend(cell if isinstance(cell, (list, tuple)) else [cell])
        return cells
    for pair in PAIR_COLUMNS:
        if all(name in row and has_text(row[name]) for name in pair):
            return [row[pair[0]], row[pair[1]]]
    for name in IMAGE_COLUMNS:
        if name in row and has_text(row[name]):
            cell = row[name]
            if hasattr(cell, "tolist") and not hasattr(cell, "mode"):
                cell = cell.tolist()
            return list(cell) if isinstance(cell, (list, tuple)) else [cell]
    return []


def items_from_rows(
    rows: Iterable[Mapping[str, Any] | None],
    *,
    base: Path,
    dataset: str,
    columns: Mapping[str, str | None] | None = None,
    excluded: Exclusions | None = None,
) -> tuple[list[Original], Exclusions, int]:
    """Originals from dict rows (``None``: a line that was not JSON); see the module docstring."""
    columns = dict(columns or {})
    excluded = excluded if excluded is not None else Exclusions()
    items: list[Original] = []
    seen: set[str] = set()
    n = 0
    for i, row in enumerate(rows):
        n += 1
        if row is None:
            excluded.add("malformed_json_line", f"row {i + 1}")
            continue
        variation = row.get("variation")
        if has_text(variation) and str(variation).strip() != "O":
            excluded.add("not_an_original", row.get("id") or f"row {i + 1}")
            continue
        id_col = columns.get("id")
        raw_id = (
            row.get(id_col) if id_col else next((row[c] for c in ID_COLUMNS if c in row and has_text(row[c])), None)
        )
        sid = str(raw_id).strip() if has_text(raw_id) else f"{dataset}-{i:05d}"
        if sid.endswith("/O"):
            sid = sid[:-2]
        ds_col = columns.get("dataset") or "dataset"
        item_dataset = str(row[ds_col]).strip() if ds_col in row and has_text(row[ds_col]) else dataset
        if re.fullmatch(r"\d+(\.0)?", sid):  # a bare row index (MMBench's `index`): unique only within its dataset
            sid = f"{item_dataset}-{int(float(sid))}"
        q_col = columns.get("question")
        question = row.get(q_col) if q_col else next((row[c] for c in QUESTION_COLUMNS if c in row), None)
        if not has_text(question):
            excluded.add("question_missing", sid)
            continue
        options = _options(row, columns.get("options"))
        if options is None and any(
            str(row.get(c) or "").strip().lower() in ("left", "right")
            for c in (columns.get("answer"), *ANSWER_COLUMNS)
            if c
        ):
            options = {"A": "Left", "B": "Right"}  # CompBench's comparative annotation
        if not options or len(options) < 2:
            excluded.add("options_invalid", sid)
            continue
        a_col = columns.get("answer")
        raw_answer = (
            row.get(a_col) if a_col else next((row[c] for c in ANSWER_COLUMNS if c in row and has_text(row[c])), None)
        )
        correct = _answer(raw_answer, options)
        if correct is None:
            excluded.add("answer_missing", sid)
            continue
        if not correct:
            excluded.add("answer_not_an_option", f"{sid}: {raw_answer}")
            continue
        images: list[Any] = []
        refs: list[str] = []
        try:
            for k, cell in enumerate(_image_cells(row, columns.get("image"))):
                found = image_of(cell, base)
                if found is None:
                    continue
                images.append(found[0])
                refs.append(found[1] or f"{sid}#{k}")
        except FileNotFoundError as exc:
            excluded.add("image_missing", f"{sid}: {str(exc)[:80]}")
            continue
        except ValueError as exc:
            excluded.add("image_unreadable", f"{sid}: {exc}")
            continue
        if not images:
            excluded.add("image_missing", sid)
            continue
        if sid in seen:
            excluded.add("duplicate_id", sid)
            continue
        seen.add(sid)
        items.append(Original(sid, item_dataset, " ".join(str(question).split()), options, correct, images, refs))
    return items, excluded, n


def _rows_of_file(path: Path, excluded: Exclusions) -> list[dict[str, Any] | None]:

    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return [row for _, row in read_jsonl(path)]
    if suffix == ".json":
        text = read_text(path)  # a compressed or binary file: what it is, in one line
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{path}: not valid JSON ({type(exc).__name__})") from None
        if isinstance(data, list):
            return [row if isinstance(row, dict) else None for row in data]
    table = read_table(path)
    excluded.merge(table.excluded)
    return [table.row(i) for i in range(table.n_rows)]


def _hub_rows(hub_id: str, config: str | None, split: str | None) -> list[dict[str, Any]]:
    datasets: Any = require("datasets", "lm-eval", f"loading {hub_id} from the Hugging Face hub")
    if split is None:
        raise InputError(f"{hub_id}: name the split to vary (--split), e.g. dev or validation")
    with from_the_hub(hub_id, OFFLINE_ALTERNATIVE):
        data = (
            datasets.load_dataset(hub_id, config, split=split) if config else datasets.load_dataset(hub_id, split=split)
        )
    return [dict(row) for row in data]


def _parquet_rows(files: Sequence[Path]) -> list[dict[str, Any]]:
    datasets: Any = require("datasets", "lm-eval", "reading a local copy of a hub dataset")
    data = datasets.load_dataset("parquet", data_files={"data": [str(f) for f in files]}, split="data")
    return [dict(row) for row in data]


class SourceOptions(TypedDict, total=False):
    """How :func:`load_originals` reads a source: its keywords, which the builder passes on as they are."""

    dataset: str | None
    split: str | None
    config: str | None
    image_root: str | Path | None
    columns: Mapping[str, str | None] | None
    limit: int | None


def load_originals(
    source: str | Path,
    *,
    dataset: str | None = None,
    split: str | None = None,
    config: str | None = None,
    image_root: str | Path | None = None,
    columns: Mapping[str, str | None] | None = None,
    limit: int | None = None,
) -> Originals:
    """The original items of ``source`` (a file, a directory or a hub id); see the module docstring.

    ``limit``: only the first ``limit`` rows are read (a whole number >= 1); the description then
    says how many rows the source has (``rows_in_source``), so a count like "5 of 5" cannot hide a sixth.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InputError(f"limit must be a whole number >= 1, got {limit!r}")
    excluded = Exclusions()
    text = str(source)
    path = Path(text).expanduser()
    description: dict[str, Any] = {"source": text}
    rows: list[dict[str, Any] | None]
    if path.exists():
        if path.is_dir():
            named = [path / n for n in ("originals.jsonl", "variations.jsonl") if (path / n).is_file()]
            parquet = sorted(path.rglob(f"{split or '*'}-*.parquet")) + sorted(
                path.rglob(f"{split}.parquet") if split else []
            )
            tables = sorted(
                p for p in path.iterdir() if p.suffix.lower() in (".jsonl", ".json", ".csv", ".tsv", ".parquet")
            )
            if named:
                file = named[0]
                rows = _rows_of_file(file, excluded)
                description.update(kind="variation-format", file=str(file))
            elif parquet:
                splits = sorted({p.name.split("-", 1)[0] for p in parquet})
                if split is None and len(splits) > 1:
                    raise InputError(
                        f"{path}: parquet files of several splits ({', '.join(splits)}); name one with --split"
                    )
                rows = list[dict[str, Any] | None](_parquet_rows(parquet))
                description.update(kind="hub-copy", files=[str(p.relative_to(path)) for p in parquet])
                file = path / "_"
            elif len(tables) == 1:
                file = tables[0]
                rows = _rows_of_file(file, excluded)
                description.update(kind="table", file=str(file))
            else:
                raise InputError(
                    f"{path}: no originals.jsonl, variations.jsonl, <split>-*.parquet or single table file in it"
                )
            base = path
        else:
            file = path
            rows = _rows_of_file(path, excluded)
            description.update(kind="table", file=str(path))
            base = path.parent
        name = dataset or path.stem if path.is_file() else dataset or path.name
    else:
        hub_id, preset_config, preset_split, preset_name = HUB_PRESETS.get(text.lower(), (text, None, None, None))
        if "/" not in hub_id:
            raise InputError(
                f"{text}: not a file or directory, nor a hub dataset id (owner/name) or one of {sorted(HUB_PRESETS)}"
            )
        config = config or preset_config
        split = split or preset_split
        rows = list[dict[str, Any] | None](_hub_rows(hub_id, config, split))
        description.update(kind="hub", hub_id=hub_id, config=config, split=split)
        base = Path.cwd()
        name = dataset or preset_name or hub_id.split("/")[-1].lower()
    if image_root is not None:
        base = Path(image_root).expanduser()
    if limit is not None:
        description.update(limit=limit, rows_in_source=len(rows))
        rows = rows[:limit]
    items, excluded, n = items_from_rows(rows, base=base, dataset=_safe_name(name), columns=columns, excluded=excluded)
    description["dataset"] = _safe_name(name)
    description["image_root"] = str(base)
    if not items:
        reasons = ", ".join(f"{e['reason']}: {e['count']}" for e in excluded.to_json()) or "no rows"
        raise InputError(f"{text}: no usable original items ({reasons})")
    return Originals(items, excluded, n, description)


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_").lower() or "data"
