"""Content digests of the JSON files judgecp writes: calibrators (``judgecp.calibrator/2``) and results.

A digest is ``sha256:<hex>`` of the canonical JSON of the object without its
``digest`` field (:func:`canonical_json`: keys sorted, no spaces, ASCII,
floats as Python's ``repr``). Whoever edits a file can recompute it: it
catches an edit or a corruption, not an adversary; the readers' field checks
do the rest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

#: The field that holds a file's digest.
DIGEST_FIELD = "digest"


def canonical_json(obj: Any) -> bytes:
    """The canonical text of a JSON value: sorted keys, no spaces, ASCII, floats as Python's ``repr``.

    ``NaN`` and ``Infinity`` (which Python's reader accepts) are written as Python writes them, so an edit
    that puts one in a file still gets a digest, and the field checks name it.
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def content_digest(obj: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of a JSON object without its ``digest`` field."""
    body = {k: v for k, v in obj.items() if k != DIGEST_FIELD}
    return "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()


__all__ = ["DIGEST_FIELD", "canonical_json", "content_digest"]
