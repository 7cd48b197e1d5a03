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

from judgecp.base.jsonio import to_strict

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


def with_digest(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The strict JSON object of a result as its file holds it: ``schema`` first (when it has one), then
    ``digest`` (:func:`content_digest` of the rest), then the body (a typed result's own :meth:`to_json`)."""
    to_json = getattr(obj, "to_json", None)
    body: dict[str, Any] = to_strict(to_json() if callable(to_json) else obj)
    body.pop(DIGEST_FIELD, None)
    head = {"schema": body.pop("schema")} if "schema" in body else {}
    out = {**head, DIGEST_FIELD: ""}
    out.update(body)
    out[DIGEST_FIELD] = content_digest(out)
    return out


__all__ = ["DIGEST_FIELD", "canonical_json", "content_digest", "with_digest"]
