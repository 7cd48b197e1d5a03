"""Prompt sets for pairwise image-preference judges: personas x templates x criteria, augmented.

The supplement (section B) builds its prompt set from lists of personas,
prompt templates and task criteria, plus "augmented" versions that flip the
order of the inputs and change the response glyph ("A" vs "I"). Here:

* a base prompt is one (persona, template, criteria) combination, rendered
  with ``{persona}``, ``{criteria}``, ``{caption}``, ``{image_1}``,
  ``{image_2}``, ``{glyph_1}``, ``{glyph_2}`` filled in;
* each base prompt comes in every combination of ``order`` (original: the
  first candidate "A" shown first; flipped: "B" shown first) and glyph set
  (``("A", "B")`` or ``("I", "II")``);
* ``answer_key`` maps each displayed glyph to the candidate it names in the
  *original* order, so answers are re-keyed before ensembling: with the
  flipped order and glyphs I/II, ``{"I": "B", "II": "A"}``.

The parts ship as package data (``data/pairwise_image_prompts.json``), with
the supplement's sample prompt, word for word, as the prompt
``supplement-sample``. A prompt set is written as JSON
(``{"schema": "judgecp.prompt-set/1", "prompts": [...]}``) for the harness
tasks and for :func:`judgecp.data.ensemble.records.read_ensemble_records`.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError, clip
from judgecp.base.outputs import atomic_write_text
from judgecp.base.schemas import describe_lines
from judgecp.base.textfiles import read_text
from judgecp.data.tables import check_readable

PARTS_FILE = "pairwise_image_prompts.json"
PROMPT_SET_SCHEMA = "judgecp.prompt-set/1"
IMAGE_PLACEHOLDERS = ("[IMAGE 1]", "[IMAGE 2]")
CAPTION_PLACEHOLDER = "[INPUT PROMPT]"
CANDIDATES = ("A", "B")


@dataclass(frozen=True)
class JudgePrompt:
    """One prompt of a prompt set."""

    id: str
    template: str  #: text with {caption}, {image_1}, {image_2} left to fill
    persona: str
    criteria: str
    template_id: str
    order: tuple[str, str]  #: original candidates in displayed order
    glyphs: tuple[str, str]
    answer_key: dict[str, str]  #: displayed glyph -> original candidate

    @property
    def flipped(self) -> bool:
        return self.order != CANDIDATES

    def render(
        self,
        caption: str = CAPTION_PLACEHOLDER,
        images: tuple[str, str] = IMAGE_PLACEHOLDERS,
    ) -> str:
        """The prompt text; ``images`` are the markers of the two displayed slots."""
        return self.template.format(caption=caption, image_1=images[0], image_2=images[1])

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["order"] = list(self.order)
        out["glyphs"] = list(self.glyphs)
        return out


def load_parts(path: str | Path | None = None) -> dict[str, Any]:
    """The persona/template/criteria lists (the shipped ones when ``path`` is None)."""
    if path is None:
        text = resources.files("judgecp.data.ensemble").joinpath(f"data/{PARTS_FILE}").read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    parts: dict[str, Any] = json.loads(text)
    for key in ("personas", "templates", "criteria", "glyph_sets"):
        if key not in parts:
            raise InputError(f"{path or PARTS_FILE}: missing the {key!r} list")
    return parts


def _pick(entries: list[dict[str, Any]], ids: Sequence[str] | None, kind: str) -> list[dict[str, Any]]:
    if ids is None:
        return entries
    by_id = {e["id"]: e for e in entries}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise InputError(f"unknown {kind} {unknown[0]!r}; known: {', '.join(by_id)}")
    return [by_id[i] for i in ids]


def _compose(
    persona: dict[str, Any],
    template: dict[str, Any],
    criteria: dict[str, Any],
    order: tuple[str, str],
    glyphs: tuple[str, str],
    prompt_id: str,
) -> JudgePrompt:
    # Fill everything but the per-item slots; braces in the parts are escaped.
    def esc(text: str) -> str:
        return text.replace("{", "{{").replace("}", "}}")

    text = template["text"].format(
        persona=esc(persona["text"]),
        criteria=esc(criteria["text"]),
        glyph_1=esc(glyphs[0]),
        glyph_2=esc(glyphs[1]),
        caption="{caption}",
        image_1="{image_1}",
        image_2="{image_2}",
    )
    return JudgePrompt(
        id=prompt_id,
        template=text,
        persona=persona["id"],
        criteria=criteria["id"],
        template_id=template["id"],
        order=order,
        glyphs=glyphs,
        answer_key={glyphs[0]: order[0], glyphs[1]: order[1]},
    )


def build_prompt_set(
    *,
    personas: Sequence[str] | None = None,
    templates: Sequence[str] | None = None,
    criteria: Sequence[str] | None = None,
    augment: bool = True,
    parts: dict[str, Any] | None = None,
) -> list[JudgePrompt]:
    """Every (persona, template, criteria) prompt, with its augmented versions.

    Parameters
    ----------
    personas, templates, criteria : sequence of str, optional
        Ids to use (default: all in the parts file).
    augment : bool
        Add the flipped-order and changed-glyph versions (4 per base prompt);
        without it, only the original order with the first glyph set.
    parts : dict, optional
        Parts as returned by :func:`load_parts` (default: the shipped ones).

    Returns
    -------
    list of JudgePrompt
        Ids are ``<persona>.<template>.<criteria>.<orig|flip>.<glyphs>``
        (glyphs joined, e.g. ``AB``, ``III``); the supplement's sample prompt
        (original order, A/B) is also listed first as ``supplement-sample``.
    """
    parts = parts or load_parts()
    chosen_personas = _pick(parts["personas"], personas, "persona")
    chosen_templates = _pick(parts["templates"], templates, "template")
    chosen_criteria = _pick(parts["criteria"], criteria, "criteria")
    glyph_sets: list[tuple[str, str]] = [(str(g[0]), str(g[1])) for g in parts["glyph_sets"]]
    orders: list[tuple[str, str]] = [CANDIDATES, (CANDIDATES[1], CANDIDATES[0])]
    if not augment:
        glyph_sets, orders = glyph_sets[:1], orders[:1]
    prompts: list[JudgePrompt] = []
    sample = parts.get("sample")
    if sample is not None:
        prompts.append(
            _compose(
                _pick(parts["personas"], [sample["persona"]], "persona")[0],
                _pick(parts["templates"], [sample["template"]], "template")[0],
                _pick(parts["criteria"], [sample["criteria"]], "criteria")[0],
                CANDIDATES,
                (parts["glyph_sets"][0][0], parts["glyph_sets"][0][1]),
                sample["id"],
            )
        )
    for persona, template, crit, order, glyphs in itertools.product(
        chosen_personas, chosen_templates, chosen_criteria, orders, glyph_sets
    ):
        tag = "orig" if order == CANDIDATES else "flip"
        prompt_id = f"{persona['id']}.{template['id']}.{crit['id']}.{tag}.{''.join(glyphs)}"
        prompts.append(_compose(persona, template, crit, order, glyphs, prompt_id))
    return prompts


def write_prompt_set(prompts: Sequence[JudgePrompt], path: str | Path) -> None:
    """Write a prompt set as ``{"schema": "judgecp.prompt-set/1", "prompts": [...]}``."""

    payload = {"schema": PROMPT_SET_SCHEMA, "prompts": [p.to_json() for p in prompts]}
    atomic_write_text(path, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")


def read_prompt_set(path: str | Path) -> list[JudgePrompt]:
    """Read a prompt set written by :func:`write_prompt_set`."""
    check_readable(path)
    text = read_text(path, "a prompt set (a UTF-8 JSON file)")
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError) as exc:
        what = describe_lines(path)
        if what is not None:
            raise InputError(f"{path}: {what}, not a prompt set") from None
        raise InputError(f"{path}: cannot read the prompt set ({type(exc).__name__}: {clip(str(exc))})") from None
    if not isinstance(payload, dict):
        raise InputError(f"{path}: not a prompt set (a JSON object with schema {PROMPT_SET_SCHEMA!r} is expected)")
    if payload.get("schema") != PROMPT_SET_SCHEMA:
        raise InputError(f"{path}: schema must be {PROMPT_SET_SCHEMA!r}, got {payload.get('schema')!r}")
    prompts = []
    for index, entry in enumerate(payload.get("prompts", [])):
        try:
            prompts.append(
                JudgePrompt(
                    id=entry["id"],
                    template=entry["template"],
                    persona=entry["persona"],
                    criteria=entry["criteria"],
                    template_id=entry["template_id"],
                    order=(entry["order"][0], entry["order"][1]),
                    glyphs=(entry["glyphs"][0], entry["glyphs"][1]),
                    answer_key=dict(entry["answer_key"]),
                )
            )
        except (KeyError, IndexError, TypeError) as exc:
            raise InputError(f"{path}: prompt {index} lacks {exc}") from exc
    ids = [p.id for p in prompts]
    if len(set(ids)) != len(ids):
        raise InputError(f"{path}: duplicate prompt ids")
    return prompts


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m judgecp.data.ensemble.prompts OUT.json [--persona ID ...] [--no-augment]``."""
    parser = argparse.ArgumentParser(prog="python -m judgecp.data.ensemble.prompts", description=__doc__.split("\n")[0])
    parser.add_argument("out", help="prompt-set JSON to write")
    parser.add_argument("--persona", action="append", help="persona id (repeatable; default all)")
    parser.add_argument("--template", action="append", help="template id (repeatable; default all)")
    parser.add_argument("--criteria", action="append", help="criteria id (repeatable; default all)")
    parser.add_argument("--no-augment", action="store_true", help="no flipped/glyph-changed versions")
    args = parser.parse_args(argv)
    try:
        prompts = build_prompt_set(
            personas=args.persona, templates=args.template, criteria=args.criteria,
            augment=not args.no_augment,
        )
    except InputError as exc:
        parser.exit(2, f"error: {exc}\n")
    write_prompt_set(prompts, args.out)
    print(f"{len(prompts)} prompts -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
