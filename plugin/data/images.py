"""Images of judge documents (Pillow, imported lazily): read when judged, never sink the run.

A document names its image by ``image_path`` (a local file) or carries it as
``image`` (a PIL image, as datasets' Image feature gives it). When it cannot
be read, the model still gets a blank placeholder (so every request is
answered and batching stays simple) and the document is remembered as
failed; the task then excludes its record as ``image_load_failed``.

Documents with several images, or whose images live in a hub table, name
them in ``image_refs``: local paths, or ``table#row#column`` references into
a table registered with :func:`register_table` (a ``datasets.Dataset`` whose
image columns are not decoded). The documents then stay small text records
(a harness may write every document into its output: lm-eval's samples
file), and an image that does not decode is a counted exclusion instead of
a crash while the harness iterates the documents. Nothing here imports a
harness; the lm-eval tasks (``judgecp.tasks``, :mod:`judgecp.adapters.lm_eval`)
are its users.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: judgecp's own logger: the core names no harness. A warning reaches the harness's console through
#: Python's default handling; the image is also counted where the document is excluded.
logger = logging.getLogger("judgecp.data.images")

#: Size of the blank image sent in place of one that failed to load.
PLACEHOLDER_SIZE = (32, 32)

_failed: set[str] = set()


#: Registered image tables: key -> {column: one-column view of the undecoded table}.
_tables: dict[str, dict[str, Any]] = {}


def _key(doc: Mapping[str, Any]) -> str:
    refs = doc.get("image_refs") or ()
    return f"{doc.get('image_path') or ''}|{'|'.join(str(r) for r in refs)}|{doc.get('id')}"


def register_table(key: str, table: Any, columns: list[str]) -> None:
    """Make ``table``'s image ``columns`` readable through ``key#row#column`` references.

    The columns are cast to ``Image(decode=False)`` (a metadata change, no
    copy), so reading a document never decodes an image by accident.
    """
    import datasets

    views = {}
    for column in columns:
        undecoded = table.cast_column(column, datasets.Image(decode=False))
        views[column] = undecoded.select_columns([column])
    _tables[key] = views


def table_ref(key: str, row: int, column: str) -> str:
    return f"{key}#{row}#{column}"


def _open_ref(ref: str) -> Any:
    """The image a reference names, decoded (raises when it cannot be read)."""
    import io

    from PIL import Image

    if ref.count("#") >= 2 and ref.split("#", 1)[0] in _tables:
        key, row, column = ref.rsplit("#", 2)
        cell = _tables[key][column][int(row)][column]
        if cell is None:
            raise OSError("no image in this row")
        if cell.get("bytes"):
            img = Image.open(io.BytesIO(cell["bytes"]))
        elif cell.get("path"):
            img = Image.open(cell["path"])
        else:
            raise OSError("an empty image cell")
    else:
        img = Image.open(ref)
    img.load()
    return img


def load_images(doc: Mapping[str, Any]) -> list[Any]:
    """Every image of the document as RGB (``image_refs``, else its one image).

    An image that cannot be read is replaced by a blank placeholder and the
    document is marked failed (see :func:`failed`); the others are kept, so
    the prompt's image count still matches. A document left out before
    judging (``exclude`` set, no image) gets one blank image.
    """
    from PIL import Image

    refs = doc.get("image_refs")
    if not refs and doc.get("exclude") and doc.get("image") is None and not doc.get("image_path"):
        # A placeholder document for a source item that cannot be judged: a blank image, nothing to warn about.
        return [Image.new("RGB", PLACEHOLDER_SIZE)]
    return [_load(doc, str(ref)) for ref in refs] if refs else [load_image(doc)]


def check_image_file(path: str | Path) -> str:
    """``""`` when the file opens as an image, else the reason (kept in the document)."""
    from PIL import Image

    try:
        with Image.open(path) as img:
            img.verify()
    except FileNotFoundError:
        return "file not found"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def load_image(doc: Mapping[str, Any]) -> Any:
    """The document's image as RGB, or a blank placeholder (and the document marked failed)."""
    return _load(doc, None)


def _load(doc: Mapping[str, Any], ref: str | None) -> Any:
    """One image of the document (``ref``, else its ``image`` or ``image_path``) as RGB, or a placeholder."""
    from PIL import Image

    try:
        if doc.get("image_error"):
            raise OSError(doc["image_error"])
        if ref is not None:
            img = _open_ref(ref)
        elif doc.get("image") is not None:
            img = doc["image"]
        else:
            img = Image.open(doc["image_path"])
            img.load()
        return img.convert("RGB")
    except Exception as exc:
        key = _key(doc)
        if key not in _failed:
            what = "image" if ref is None else f"image {ref}"
            logger.warning(
                "judgecp: %s of document %s could not be read (%s); it will be excluded", what, doc.get("id"), exc
            )
        _failed.add(key)
        return Image.new("RGB", PLACEHOLDER_SIZE)


def fingerprint(images: Sequence[Any]) -> str:
    """Content hash of a request's images (PIL): equal images, equal documents (scored once)."""
    digest = hashlib.blake2b(digest_size=16)
    for img in images:
        digest.update(f"{img.mode}{img.size}".encode())
        digest.update(img.tobytes())
    return digest.hexdigest()


def failed(doc: Mapping[str, Any]) -> bool:
    """Whether :func:`load_image` had to substitute this document's image."""
    return _key(doc) in _failed
