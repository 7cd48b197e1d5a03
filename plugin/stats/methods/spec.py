"""Method specs: ``"name"`` or ``"name(key=value, ...)"``, parsed and written back (no registry here)."""

from __future__ import annotations

import ast
import re
from typing import Any

from judgecp.base.errors import InputError

_SPEC = re.compile(r"^\s*([A-Za-z_][\w]*)\s*(?:\((.*)\))?\s*$", re.S)



def parse_method_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Parse ``"name"`` or ``"name(key=value, ...)"`` into a name and keyword arguments.

    Values are Python literals; a bare word is taken as a string, so
    ``lac(probabilities=recalibrated)`` works without quotes.
    """
    match = _SPEC.match(spec)
    if not match:
        raise InputError(f"cannot read method {spec!r}; write NAME or NAME(key=value, ...)")
    name, args = match.group(1), (match.group(2) or "").strip()
    kwargs: dict[str, Any] = {}
    if args:
        try:
            call = ast.parse(f"f({args})", mode="eval").body
        except SyntaxError as exc:
            raise InputError(f"cannot read the arguments of method {spec!r}: {exc.msg}") from exc
        assert isinstance(call, ast.Call)
        if call.args:
            raise InputError(f"method {spec!r}: arguments must be key=value")
        for kw in call.keywords:
            node = kw.value
            if isinstance(node, ast.Name):
                kwargs[str(kw.arg)] = node.id
            elif all(isinstance(n, (ast.Name, ast.BinOp, ast.Add, ast.Load)) for n in ast.walk(node)):
                kwargs[str(kw.arg)] = ast.unparse(node).replace(" ", "")  # words joined by +: features=entropy+margin
            else:
                try:
                    kwargs[str(kw.arg)] = ast.literal_eval(node)
                except ValueError as exc:
                    raise InputError(f"method {spec!r}: {kw.arg} must be a literal") from exc
    return name, kwargs


def canonical_spec(name: str, kwargs: dict[str, Any]) -> str:
    """The spec string used as the method's key in reports."""
    if not kwargs:
        return name
    inner = ", ".join(f"{k}={v}" for k, v in sorted(kwargs.items()))
    return f"{name}({inner})"


def split_method_list(text: str) -> list[str]:
    """Split ``"naive,lac(probabilities=recalibrated, fit_fraction=0.3),aps"`` at top-level commas."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return [s for s in out if s]
