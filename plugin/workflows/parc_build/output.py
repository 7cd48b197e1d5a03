"""What a PARC build writes: the image files, the variation records and the manifest (``docs/parc_format.md``)."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import judgecp.workflows.parc_build.language as language
import judgecp.workflows.parc_build.vision as vision
from judgecp.base.errors import InputError, require
from judgecp.base.exclusions import Exclusions
from judgecp.base.version import __version__
from judgecp.stats.parc import family_of
from judgecp.workflows.parc_build.rewriters import Rewriter
from judgecp.workflows.parc_build.sources import Original, Originals

FORMAT = "judgecp.parc_build/1"
FILE = "variations.jsonl"


#: Characters of an item's id kept in its image file names (a file name has at most 255 bytes).
STEM_CHARS = 120


def stem(source_id: str) -> str:
    """The file-name form of an item's id: safe characters, a hash of the id when it had others or was cut."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", source_id).strip("._") or "item"
    if safe != source_id or len(safe) > STEM_CHARS:
        safe = safe[:STEM_CHARS] + "-" + hashlib.sha256(source_id.encode()).hexdigest()[:8]
    return safe


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ImageWriter:
    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.images = out_dir / "images"
        self.images.mkdir(parents=True, exist_ok=True)

    def original(self, item: Original) -> list[str]:
        """Write the item's own images; returns their paths relative to the output directory."""
        rels = []
        for k, image in enumerate(item.images):
            suffix = f"_{k}" if len(item.images) > 1 else ""
            if isinstance(image, Path):
                ext = image.suffix.lower() or ".img"
                rel = f"images/{stem(item.source_id)}_O{suffix}{ext}"
                shutil.copyfile(image, self.out_dir / rel)
            else:
                rel = f"images/{stem(item.source_id)}_O{suffix}.png"
                self._save(image, rel)
            rels.append(rel)
        return rels

    def _save(self, image: Any, rel: str) -> None:
        if image.mode not in ("RGB", "RGBA", "L"):
            image = image.convert("RGB")
        image.save(self.out_dir / rel, format="PNG")

    def transformed(
        self, item: Original, rels: Sequence[str], variation: str, settings: vision.TransformSettings
    ) -> list[str]:
        pil: Any = require("PIL.Image", "parc", "PARC's vision variations")
        out = []
        for k, rel in enumerate(rels):
            with pil.open(self.out_dir / rel) as image:
                image.load()
                new = vision.transform(variation, image, settings)
            suffix = f"_{k}" if len(rels) > 1 else ""
            target = f"images/{stem(item.source_id)}_{variation}{suffix}.png"
            self._save(new, target)
            out.append(target)
        return out


def image_field(rels: Sequence[str]) -> str | list[str]:
    return rels[0] if len(rels) == 1 else list(rels)


def variation_record(item: Original, variation: str, question: str, correct: Sequence[str], rels: Sequence[str],
            **extra: Any) -> dict[str, Any]:
    record = {
        "id": f"{item.source_id}/{variation}", "source_id": item.source_id, "dataset": item.dataset,
        "variation": variation, "question": question,
        "options": dict(item.options), "correct": list(correct), "image": image_field(rels),
    }
    if variation != "O":
        record["family"] = family_of(variation)
    record.update({k: v for k, v in extra.items() if v})
    return record


#: What a build writes into its folder (and replaces there, the manifest last); anything else there stays.
OUTPUTS = (FILE, "images", "review.jsonl", "manifest.json")


def check_output(out_dir: Path, overwrite: bool) -> None:
    """An earlier build in ``out_dir`` is replaced only with ``overwrite`` (and only once the new one is complete)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir}: a file, not a folder; give a folder name")
    present = [out_dir / name for name in OUTPUTS if (out_dir / name).exists()]
    if present and not overwrite:
        raise InputError(f"{out_dir} already holds a build ({present[0].name}); pass overwrite=True (--overwrite)")


def build_manifest(
    out: Path,
    originals: Originals,
    chosen: Sequence[str],
    counts: Mapping[str, int],
    excluded: Mapping[str, Exclusions],
    review: Sequence[Mapping[str, Any]],
    rewriter: Rewriter | None,
    settings: vision.TransformSettings,
    exchange_map: vision.ExchangeMap | str | Path | None,
    exchange_replace: str,
    ls_n_fallback: bool,
) -> dict[str, Any]:

    files = [out / FILE, *sorted(p for p in (out / "images").rglob("*") if p.is_file())]
    hashes = {str(p.relative_to(out)): file_sha256(p) for p in files}
    content = hashlib.sha256("".join(f"{h}  {rel}\n" for rel, h in sorted(hashes.items())).encode()).hexdigest()
    language_used = [v for v in chosen if v in language.LANGUAGE_VARIATIONS]
    vision_used = [v for v in chosen if v in vision.VISION_REFORMULATIONS]
    try:
        import PIL

        pillow = PIL.__version__
    except ImportError:  # pragma: no cover - a language-only build
        pillow = None
    review_reasons = Exclusions()
    for entry in review:
        for reason in entry.get("checks") or [entry.get("action")]:
            review_reasons.add(str(reason), entry["id"])
    return {
        "format": FORMAT,
        "judgecp_version": __version__,
        "pillow_version": pillow,
        "source": {**originals.description, "items_read": originals.n_read, "items_kept": len(originals.items),
                   "excluded": originals.excluded.to_json()},
        "datasets": sorted({i.dataset for i in originals.items}),
        "variations": list(chosen),
        "counts": dict(counts),
        "excluded": {v: e.to_json() for v, e in excluded.items() if e},
        "rewriter": rewriter.identity() if rewriter is not None else None,
        "prompts": {v: {"file": f"judgecp/parc_build/prompts/{v}.txt", "sha256": language.prompt_digest(v),
                        "text": language.prompt_template(v)} for v in language_used} if rewriter is not None else {},
        "ls_n_fallback": "rule: 'not' after the first auxiliary verb, flagged per record" if ls_n_fallback else None,
        "transforms": {v: settings.describe()[v] for v in vision_used},
        "exchange": ({"source": exchange_map.source, "sha256": exchange_map.digest(), "replace": exchange_replace}
                     if isinstance(exchange_map, vision.ExchangeMap) else None),
        "review": {"file": "review.jsonl", "entries": len(review), "reasons": review_reasons.to_json()},
        "files": len(hashes),
        "variations_sha256": hashes[FILE],
        "content_hash": content,
    }
