"""Build a PARC variation directory (``docs/parc_format.md``) from original multiple-choice VQA items.

``build(source, out_dir, variations=...)`` writes::

    out_dir/variations.jsonl   one record per (item, variation), the original "O" first
    out_dir/images/...         the originals' images and the transformed ones
    out_dir/review.jsonl       rewriter outputs that failed a check, and rule-based LS-N records
    out_dir/manifest.json      source, counts, exclusions, rewriter, prompts, transforms, content hash

which ``lm_eval --tasks parc_cp`` (``data_dir``/``JUDGECP_PARC_DIR``) and
``judgecp vlmeval build-tsv parc --source out_dir`` read as they are. The
build is deterministic: the same source, settings, rewriter answers and
Pillow version give the same bytes and the same ``content_hash``.

Items a variation cannot be built for are counted under that variation in
the manifest's ``excluded`` (never silently dropped): ``not_two_images`` and
``not_left_right`` (VS-S, VS-E), ``no_more_less`` (LS-M), VS-E's
``question_single_instance``, ``question_not_in_exchange_map``,
``no_valid_exchange``, the rewrite checks of :mod:`.language`
(``rewrite_empty``, ``rewrite_unchanged``, ``question_mark_lost``,
``options_leaked``) and ``no_auxiliary_verb`` (the LS-N rule found no verb
to negate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import judgecp.workflows.parc_build.language as language
import judgecp.workflows.parc_build.vision as vision
from judgecp.base.errors import InputError, require, unknown
from judgecp.base.exclusions import Exclusions
from judgecp.base.outputs import building_directory
from judgecp.workflows.parc_build.output import (
    FILE,
    ImageWriter,
    build_manifest,
    check_output,
    variation_record,
)
from judgecp.workflows.parc_build.rewriters import Rewriter
from judgecp.workflows.parc_build.sources import Original, Originals, SourceOptions, load_originals

if TYPE_CHECKING:
    from typing_extensions import Unpack

ALL_VARIATIONS = ("LR-I", "LR-C", "LR-V", "LS-N", "LS-A", "LS-M", "VR-B", "VR-L", "VR-R", "VS-S", "VS-E")


@dataclass
class BuildResult:
    """What a build wrote: counts per variation (``O`` included), exclusions, the manifest."""

    out_dir: Path
    counts: dict[str, int]
    excluded: dict[str, Exclusions]
    source_excluded: Exclusions
    review: list[dict[str, Any]]
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        return str(self.manifest["content_hash"])


def parse_variations(spec: str | Sequence[str]) -> list[str]:
    """``"VR-B,VR-R"``, ``"all"``, ``"vision"``, ``"language"`` or a list -> PARC's names, in PARC's order."""
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    groups = {"all": ALL_VARIATIONS, "vision": vision.VISION_REFORMULATIONS + vision.VISION_SEMANTIC,
              "language": language.LANGUAGE_VARIATIONS}
    chosen: set[str] = set()
    for name in names:
        if name.lower() in groups:
            chosen.update(groups[name.lower()])
        elif name.upper() in ALL_VARIATIONS:
            chosen.add(name.upper())
        else:
            raise unknown("PARC variation", name, [*ALL_VARIATIONS, *groups])
    if not chosen:
        raise InputError("no variations named (e.g. --variations VR-B,VR-R,VS-S or all)")
    return [v for v in ALL_VARIATIONS if v in chosen]


def build(
    source: str | Path | Originals,
    out_dir: str | Path,
    *,
    variations: str | Sequence[str] = ALL_VARIATIONS,
    rewriter: Rewriter | None = None,
    exchange_map: vision.ExchangeMap | str | Path | None = None,
    exchange_replace: Literal["winner", "loser", "either"] = "winner",
    ls_n_fallback: bool = False,
    clean_questions: bool = False,
    ls_m_scope: Literal["more_less", "comparative"] = "more_less",
    transforms: vision.TransformSettings | None = None,
    overwrite: bool = False,
    jobs: int = 1,
    **source_options: Unpack[SourceOptions],
) -> BuildResult:
    """Write the PARC variation directory for ``source`` (see the module docstring).

    Parameters
    ----------
    source
        A JSONL of originals in the variation format, any table with
        question/options/answer/image columns, a directory, a hub dataset id
        (:func:`judgecp.workflows.parc_build.sources.load_originals`) or loaded
        :class:`~judgecp.workflows.parc_build.sources.Originals`.
    dataset, split, config, image_root, columns, limit
        How a source that is not yet loaded is read: passed on to
        :func:`~judgecp.workflows.parc_build.sources.load_originals` (its
        :class:`~judgecp.workflows.parc_build.sources.SourceOptions`).
    variations
        PARC's names (``"VR-B,VR-R,VS-S"``, ``"all"``, ``"vision"``, ``"language"``).
    rewriter
        Needed by the language variations (LR-*, LS-*), except LS-N with ``ls_n_fallback``.
    exchange_map
        Needed by VS-E: an :class:`~judgecp.workflows.parc_build.vision.ExchangeMap` or its file.
    ls_n_fallback
        LS-N by rule ("not" after the first auxiliary verb) where there is no
        rewriter or its output fails a check; each such record is flagged
        ``ls_n_rule_fallback`` and listed in the review file.
    ls_m_scope
        Which questions get LS-M: those with "more", "less" or "fewer"
        (``"more_less"``, default), or also every two-image Left/Right item
        (``"comparative"``: a comparative question asks which image has
        more of something, however it is worded, e.g. "Which umbrella is
        yellower?", which the LS-M prompt's own examples turn into "less").
    clean_questions
        First rephrase every original question into a grammatical question
        with the rewriter and A7.4's prompt (MMBench cleaning, steps 2-3);
        the original record keeps the source's text as ``question_source``.
        A rephrasing that fails a check (empty, no question mark, options
        leaked) keeps the source's text and is listed in the review file.
    jobs
        Threads for the image transforms (Pillow's filters and PNG encoder
        release the GIL); the output does not depend on it.

    Returns
    -------
    BuildResult
        Counts per variation, exclusions, review entries and the manifest.
    """
    chosen = parse_variations(variations)
    settings = transforms or vision.TransformSettings()
    needs_rewriter = [v for v in chosen if v in language.LANGUAGE_VARIATIONS and not (v == "LS-N" and ls_n_fallback)]
    if needs_rewriter and rewriter is None:
        raise InputError(f"{', '.join(needs_rewriter)} need a rewriter (an OpenAI-compatible endpoint or a local "
                         "Hugging Face model); vision variations need none")
    if ls_m_scope not in ("more_less", "comparative"):
        raise InputError(f"ls_m_scope must be 'more_less' or 'comparative', got {ls_m_scope!r}")
    if clean_questions and rewriter is None:
        raise InputError("cleaning the questions (A7.4) needs a rewriter")
    if "VS-E" in chosen and exchange_map is None:
        raise InputError("VS-E needs an exchange map (which image beats which per question; docs/parc_build.md)")
    if isinstance(exchange_map, (str, Path)):
        exchange_map = vision.ExchangeMap.read(exchange_map)
    if any(v in chosen for v in vision.VISION_REFORMULATIONS):
        require("PIL.Image", "parc", "PARC's vision variations")
    originals = source if isinstance(source, Originals) else load_originals(source, **source_options)
    review: list[dict[str, Any]] = []
    cache: dict[tuple[str, str], str] = {}
    cleaning = Exclusions()
    if clean_questions and rewriter is not None:
        originals = _clean(originals, rewriter, cache, review, cleaning)
    out = Path(out_dir)
    inside = next((i for item in originals.items for i in item.images
                   if isinstance(i, Path) and i.resolve().is_relative_to(out.resolve())), None)
    if inside is not None:
        raise InputError(f"{inside}: the source's images are inside the output directory {out}; choose another -o")
    check_output(out, overwrite)
    # Built in a temporary folder and moved into place at the end (the manifest last): a failed or
    # interrupted build (rewriter down, Ctrl-C) leaves the earlier build as it was, and no half-written one.
    with building_directory(out, last="manifest.json") as tmp:
        writer = ImageWriter(tmp)
        excluded = {v: Exclusions() for v in chosen}
        counts = {v: 0 for v in ("O", *chosen)}

        # Original images first: VS-E points at other items' images.
        written: dict[str, list[str]] = {}
        by_ref: dict[tuple[str, str], str] = {}
        for item in originals.items:
            rels = writer.original(item)
            written[item.source_id] = rels
            for ref, rel in zip(item.image_refs, rels, strict=True):
                by_ref[(item.dataset, vision.image_key(ref))] = rel

        exchanges: dict[str, vision.Exchange] = {}
        exchange_left_out: dict[str, str] = {}
        if "VS-E" in chosen and isinstance(exchange_map, vision.ExchangeMap):
            for ds in sorted({i.dataset for i in originals.items}):
                pairs = [(i.source_id, i.question, i.image_refs, vision.winner_side(i.options, i.correct))
                         for i in originals.items if i.dataset == ds and i.two_images]
                planned, left = vision.plan_exchanges([p for p in pairs if p[3] is not None],  # type: ignore[misc]
                                                      exchange_map, replace=exchange_replace)
                exchanges.update(planned)
                exchange_left_out.update(left)

        prepared: dict[tuple[str, str], list[str] | OSError] = {}
        tasks = [(item, v) for item in originals.items for v in chosen if v in vision.VISION_REFORMULATIONS]
        if jobs > 1 and tasks:
            from concurrent.futures import ThreadPoolExecutor

            def run(task: tuple[Original, str]) -> list[str] | OSError:
                item, variation = task
                try:
                    return writer.transformed(item, written[item.source_id], variation, settings)
                except OSError as exc:
                    return exc

            with ThreadPoolExecutor(max_workers=jobs) as pool:
                for (item, variation), done in zip(tasks, pool.map(run, tasks), strict=True):
                    prepared[(item.source_id, variation)] = done

        records: list[dict[str, Any]] = []
        for item in originals.items:
            rels = written[item.source_id]
            records.append(variation_record(item, "O", item.question, item.correct, rels,
                                   question_source=item.extra.get("question_source")))
            counts["O"] += 1
            for variation in chosen:
                record = _variation(item, variation, rels, writer=writer, settings=settings, rewriter=rewriter,
                                    cache=cache, ls_n_fallback=ls_n_fallback, excluded=excluded[variation],
                                    review=review, exchanges=exchanges, exchange_left_out=exchange_left_out,
                                    by_ref=by_ref, prepared=prepared, ls_m_scope=ls_m_scope)
                if record is not None:
                    records.append(record)
                    counts[variation] += 1

        with (tmp / FILE).open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
        with (tmp / "review.jsonl").open("w", encoding="utf-8") as handle:
            for entry in review:
                handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        manifest = build_manifest(tmp, originals, chosen, counts, excluded, review, rewriter, settings,
                             exchange_map if "VS-E" in chosen else None, exchange_replace, ls_n_fallback)
        if "LS-M" in chosen:
            manifest["ls_m_scope"] = ls_m_scope
        if clean_questions:
            manifest["cleaning"] = {"prompt": {"file": "judgecp/parc_build/prompts/clean.txt",
                                               "sha256": language.prompt_digest("clean"),
                                               "text": language.prompt_template("clean")},
                                    "outcomes": cleaning.to_json()}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return BuildResult(out, counts, excluded, originals.excluded, review, manifest)


def _clean(originals: Originals, rewriter: Rewriter, cache: dict[tuple[str, str], str],
           review: list[dict[str, Any]], outcomes: Exclusions) -> Originals:
    """A7.4 steps 2-3: each question rephrased into one grammatical question (checked, else kept)."""
    from dataclasses import replace

    items = []
    for item in originals.items:
        key = ("clean", item.question)
        if key not in cache:
            cache[key] = rewriter.rewrite(language.fill(language.prompt_template("clean"), item.question))
        raw = cache[key]
        output = language.clean_output(raw)
        failed = language.check_output("clean", item.question, output, item.options)
        if failed:
            outcomes.add("kept_source_question", item.source_id)
            review.append({"id": f"{item.source_id}/O", "source_id": item.source_id, "dataset": item.dataset,
                           "variation": "O", "original": item.question, "raw_output": raw, "output": output,
                           "checks": failed, "action": "cleaning_failed_kept_source_question"})
            items.append(item)
        elif language.unchanged(item.question, output):
            outcomes.add("unchanged", item.source_id)
            items.append(item)
        else:
            outcomes.add("rephrased", item.source_id)
            items.append(replace(item, question=output, extra={**item.extra, "question_source": item.question}))
    return Originals(items, originals.excluded, originals.n_read, originals.description)


def _variation(
    item: Original,
    variation: str,
    rels: list[str],
    *,
    writer: ImageWriter,
    settings: vision.TransformSettings,
    rewriter: Rewriter | None,
    cache: dict[tuple[str, str], str],
    ls_n_fallback: bool,
    excluded: Exclusions,
    review: list[dict[str, Any]],
    exchanges: Mapping[str, vision.Exchange],
    exchange_left_out: Mapping[str, str],
    by_ref: Mapping[tuple[str, str], str],
    prepared: Mapping[tuple[str, str], list[str] | OSError],
    ls_m_scope: str,
) -> dict[str, Any] | None:
    sid = item.source_id
    if variation in vision.VISION_REFORMULATIONS:
        done = prepared.get((sid, variation))
        if done is None:
            try:
                done = writer.transformed(item, rels, variation, settings)
            except OSError as exc:
                done = exc
        if isinstance(done, OSError):
            excluded.add("image_unreadable", f"{sid}: {done}")
            return None
        return variation_record(item, variation, item.question, item.correct, done)
    if variation in vision.VISION_SEMANTIC:
        if not item.two_images:
            excluded.add("not_two_images", sid)
            return None
        flipped = vision.flipped(item.options, item.correct)
        if flipped is None:
            excluded.add("not_left_right", sid)
            return None
        if variation == "VS-S":
            return variation_record(item, variation, item.question, flipped, [rels[1], rels[0]])
        if sid in exchange_left_out or sid not in exchanges:
            excluded.add(exchange_left_out.get(sid, "no_valid_exchange"), sid)
            return None
        ex = exchanges[sid]
        target = by_ref.get((item.dataset, ex.image))
        if target is None:  # the map names an image of this question that no kept item carries
            excluded.add("no_valid_exchange", sid)
            return None
        new_rels = list(rels)
        new_rels[ex.side] = target
        detail = {"side": vision.SIDES[ex.side], "replaced": ex.replaced, "with": ex.image, "role": ex.role}
        return variation_record(item, variation, item.question, flipped, new_rels, exchange=detail)
    # Language variations.
    comparative = ls_m_scope == "comparative" and item.two_images and vision.side_letters(item.options) is not None
    if variation == "LS-M" and not (language.has_more_less(item.question) or comparative):
        excluded.add("no_more_less", sid)
        return None
    correct = language.rekey(variation, list(item.options), item.correct)
    if not correct:
        excluded.add("no_wrong_option", sid)
        return None
    failed: list[str] = []
    output = raw = ""
    if rewriter is not None:
        key = (variation, item.question)
        if key not in cache:
            cache[key] = rewriter.rewrite(language.fill(language.prompt_template(variation), item.question))
        raw = cache[key]
        output = language.clean_output(raw)
        failed = language.check_output(variation, item.question, output, item.options)
        if not failed:
            flags = ["rewrite_unchanged"] if language.unchanged(item.question, output) else []
            if flags:  # allowed by the LR-I / LR-C prompts, but a human may want to see it
                review.append({"id": f"{sid}/{variation}", "source_id": sid, "dataset": item.dataset,
                               "variation": variation, "original": item.question, "raw_output": raw,
                               "output": output, "checks": flags, "action": "kept_flagged"})
            return variation_record(item, variation, output, correct, rels, generated_by="rewriter", flags=flags)
    entry = {"id": f"{sid}/{variation}", "source_id": sid, "dataset": item.dataset, "variation": variation,
             "original": item.question, "raw_output": raw, "output": output, "checks": failed}
    if variation == "LS-N" and ls_n_fallback:
        ruled = language.negate_by_rule(item.question)
        if ruled is not None:
            review.append({**entry, "action": "rule_fallback", "fallback": ruled})
            return variation_record(item, variation, ruled, correct, rels, generated_by="rule:not-after-auxiliary",
                           flags=["ls_n_rule_fallback"])
        failed = [*failed, "no_auxiliary_verb"]
        entry["checks"] = failed
    review.append({**entry, "action": "excluded"})
    for reason in failed:
        excluded.add(reason, sid)
    return None
