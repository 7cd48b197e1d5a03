"""What every TSV builder shares: finding the source files, labels, images stored once, the manifest."""

from __future__ import annotations

import base64
import csv
import functools
import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.base.outputs import building_directory
from judgecp.base.scale import LikertScale
from judgecp.data.tables import read_jsonl

#: Manifest format version (bump when its fields change meaning).
MANIFEST_VERSION = 1


@dataclass
class BuildResult:
    """What a builder wrote and what it left out."""

    name: str
    tsv: Path
    manifest: Path
    rows_read: int
    rows_written: int
    excluded: Exclusions = field(default_factory=Exclusions)
    images: int = 0
    #: Pairwise: the pairs written (each as two rows, one per order); the source's lines are pairs.
    pairs: int | None = None

    def summary(self) -> str:
        excl = ", ".join(f"{e['reason']} {e['count']}" for e in self.excluded.to_json()) or "none"
        images = f"{self.images} distinct images"
        if self.pairs is not None:  # read and left out count pairs; every pair kept is two rows
            wrote = (f"read {self.rows_read} pairs, wrote {self.pairs} pairs as "
                     f"{self.rows_written} rows (each pair in both orders; {images})")
        else:
            wrote = f"read {self.rows_read} rows, wrote {self.rows_written} ({images})"
        return f"{self.name}: {wrote} to {self.tsv}; left out: {excl}"


def manifest_path(tsv: Path) -> Path:
    return tsv.with_name(tsv.stem + ".judgecp.json")


def read_manifest(tsv: str | Path) -> dict[str, Any] | None:
    """The build manifest beside a TSV, or ``None`` if there is none (or it is unreadable)."""
    path = manifest_path(Path(tsv))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def image_readable(path: Path) -> bool:
    """Whether Pillow decodes the image file (``True`` when Pillow is not installed: nothing to check with)."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return True
    stat = path.stat()
    return _decodes(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _decodes(path: str, mtime_ns: int, size: int) -> bool:
    """One decode per file version (several records share an image)."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.load()
    except Exception:  # Pillow raises many types (OSError, SyntaxError, struct.error, ...) for damaged files
        return False
    return True


def find(source: Path, candidates: Sequence[str], what: str, explicit: str | Path | None) -> Path:
    """``explicit`` (which must exist), else the first of ``candidates`` under ``source``."""
    if explicit is not None:
        path = Path(explicit)
        if not path.exists():
            raise InputError(f"{what} {path} does not exist")
        return path
    for rel in candidates:
        path = source / rel
        if path.exists():
            return path
    raise InputError(
        f"no {what} under {source} (looked for {', '.join(candidates)}); pass it explicitly"
    )


def scale_label(value: Any, scale: LikertScale) -> tuple[int | None, str | None]:
    """An integer label of the scale, or ``(None, reason)``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, "label_missing"
    if isinstance(value, bool):
        return None, "label_not_numeric"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None, "label_not_numeric"
    if math.isnan(number):
        return None, "label_missing"
    if number != round(number) or int(number) not in set(scale.labels.tolist()):
        return None, "label_off_scale"
    return int(number), None


class Build:
    """One build: rows read, rows left out (and why), images stored once.

    An image (or a list of images: two-image comparative items, VLMEvalKit's
    ``str(list)`` of base64 strings) is stored at its first row; later rows
    refer to that row's index.
    """

    def __init__(self) -> None:
        self.excluded = Exclusions()
        self.read = 0
        self.first_index: dict[Path | tuple[Path, ...], str] = {}

    def image(self, paths: Path | Sequence[Path], index: str) -> str:
        key = paths.resolve() if isinstance(paths, Path) else tuple(p.resolve() for p in paths)
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        if key in self.first_index:
            return self.first_index[key]
        self.first_index[key] = index
        if isinstance(key, Path):
            return base64.b64encode(key.read_bytes()).decode("ascii")
        return repr([base64.b64encode(p.read_bytes()).decode("ascii") for p in key])

    def items(self, path: Path, id_key: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(id, item)`` of every JSONL line with a new, non-empty ``id_key``; the others are counted."""
        seen: set[str] = set()
        for lineno, item in read_jsonl(path):
            self.read += 1
            if item is None:
                self.excluded.add("malformed_json_line", f"line {lineno}")
                continue
            rid = "" if item.get(id_key) is None else str(item[id_key]).strip()
            if not rid:
                self.excluded.add("field_missing", f"line {lineno}: {id_key}")
                continue
            if rid in seen:
                self.excluded.add("duplicate_id", rid)
                continue
            seen.add(rid)
            yield rid, item

    def missing(self, rid: str, item: dict[str, Any], keys: Sequence[str], also: Sequence[str] = ()) -> bool:
        """Whether some of ``keys`` (and the names in ``also``) are empty: counted as ``field_missing``."""
        absent = [k for k in keys if not str(item.get(k) or "").strip()] + list(also)
        if absent:
            self.excluded.add("field_missing", f"{rid}: {', '.join(absent)}")
        return bool(absent)

    def write(self, out_dir: str | Path, name: str, rows: Sequence[dict[str, Any]],
              source_info: dict[str, Any], *, pairs: int | None = None) -> BuildResult:
        """``<out_dir>/<name>.tsv`` (the columns of the first row) and its manifest (``pairs``: the
        pairs written, when each is two rows)."""
        if not rows:
            reasons = ", ".join(f"{e['reason']} {e['count']}" for e in self.excluded.to_json()) or "none"
            raise InputError(f"{name}: no row could be built (left out: {reasons})")
        out = Path(out_dir)
        tsv = out / f"{name}.tsv"
        # Built aside, then the TSV and its manifest (last) moved into place: an interrupted build
        # leaves the earlier files, and never creates a half-filled $LMUData.
        with building_directory(out, last=manifest_path(tsv).name) as build:
            self._write(build, tsv.name, rows, source_info)
        return BuildResult(name=name, tsv=tsv, manifest=manifest_path(tsv), rows_read=self.read,
                           rows_written=len(rows), excluded=self.excluded,
                           images=len(self.first_index), pairs=pairs)

    def _write(self, folder: Path, tsv_name: str, rows: Sequence[dict[str, Any]], source_info: dict[str, Any]) -> None:
        name = Path(tsv_name).stem
        tsv = folder / tsv_name
        with tsv.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        digest = hashlib.md5()
        with tsv.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        result = BuildResult(name=name, tsv=tsv, manifest=manifest_path(tsv), rows_read=self.read,
                             rows_written=len(rows), excluded=self.excluded, images=len(self.first_index))
        manifest = {
            "manifest_version": MANIFEST_VERSION,
            "dataset": name,
            "kind": source_info["kind"],
            "tsv": tsv.name,
            "tsv_md5": digest.hexdigest(),
            "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "source": source_info,
            "rows_read": result.rows_read,
            "rows_written": result.rows_written,
            "distinct_images": result.images,
            "excluded": result.excluded.to_json(),
        }
        result.manifest.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
