"""Images for judge tasks: read lazily, never sink the run.

A document names its image by ``image_path`` (a local file) or carries it as
``image`` (a PIL image, as datasets' Image feature gives it). When it cannot
be read, the model still gets a blank placeholder (so every request is
answered and batching stays simple) and the document is remembered as
failed; the task then excludes its record as ``image_load_failed``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger("lm_eval.judgecp")

#: Size of the blank image sent in place of one that failed to load.
PLACEHOLDER_SIZE = (32, 32)

_failed: set[str] = set()


def _key(doc: Mapping[str, Any]) -> str:
    return f"{doc.get('image_path') or ''}|{doc.get('id')}"


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
    from PIL import Image

    try:
        if doc.get("image_error"):
            raise OSError(doc["image_error"])
        if doc.get("image") is not None:
            img = doc["image"]
        else:
            img = Image.open(doc["image_path"])
            img.load()
        return img.convert("RGB")
    except Exception as exc:
        key = _key(doc)
        if key not in _failed:
            logger.warning("judgecp: image of document %s could not be read (%s); it will be excluded", doc.get("id"), exc)
        _failed.add(key)
        return Image.new("RGB", PLACEHOLDER_SIZE)


def failed(doc: Mapping[str, Any]) -> bool:
    """Whether :func:`load_image` had to substitute this document's image."""
    return _key(doc) in _failed
