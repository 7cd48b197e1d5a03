"""The images of an original PARC item: a path, base64 text, ``{"bytes", "path"}`` cells or PIL images, each
checked to be an image (``image_unreadable`` otherwise; :mod:`judgecp.workflows.parc_build.sources`)."""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError, require
from judgecp.data.choice import has_text


def image_of(cell: Any, base: Path) -> tuple[Any, str] | None:
    """(a PIL image or a file path, its reference); None when there is no image."""
    if not has_text(cell):
        return None
    if hasattr(cell, "size") and hasattr(cell, "mode"):  # a PIL image (datasets' Image feature)
        return cell, ""
    if isinstance(cell, Mapping):
        if cell.get("bytes"):
            return decode_image(cell["bytes"]), str(cell.get("path") or "")
        if cell.get("path"):
            cell = cell["path"]
        else:
            return None
    if isinstance(cell, bytes):
        return decode_image(cell), ""
    text = str(cell).strip()
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = base / path
    if len(text) < 1024 and path.is_file():
        verify_image(path)
        return path, text
    if len(text) >= 64 and re.fullmatch(r"[A-Za-z0-9+/=\s]+", text[:4096]):
        try:
            return decode_image(base64.b64decode(text, validate=False)), ""
        except InputError:
            raise
        except Exception:
            pass
    raise FileNotFoundError(text)


def verify_image(path: Path) -> None:
    """A file that Pillow cannot read is ``image_unreadable`` (checked when Pillow is installed)."""
    try:
        from PIL import Image
    except ImportError:  # a language-only build without the parc extra copies the files unchecked
        return
    try:
        with Image.open(path) as image:
            image.verify()
    except Exception as exc:
        raise ValueError(f"not an image ({type(exc).__name__})") from None


def decode_image(data: bytes) -> Any:
    image_mod: Any = require("PIL.Image", "parc", "reading images")
    try:
        image = image_mod.open(io.BytesIO(data))
        image.load()
        return image
    except Exception as exc:
        raise ValueError(f"not an image ({exc})") from None
