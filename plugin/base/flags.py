"""Flag values checked when the command line is parsed: argparse ``type=`` helpers.

Every level flag (``--alpha``, ``--alphas``, ``--delta``, ``--drift-level``,
``--cal-fraction``) goes through :func:`level` or :func:`levels`, every other
number flag through :func:`number` or :func:`whole`: NaN, infinities,
values out of range and words are refused before any work, in one line that
names the flag (:class:`judgecp.cli.Parser` turns argparse's message into an
:class:`~judgecp.base.errors.InputError`).

>>> level("0.1")
0.1
>>> levels("0.05,0.1")
(0.05, 0.1)
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _float(text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def level(text: str) -> float:
    """A level or share strictly between 0 and 1 (``--alpha``, ``--delta``, ``--drift-level``, ``--cal-fraction``)."""
    value = _float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return value


def levels(text: str) -> tuple[float, ...]:
    """Comma-separated distinct levels in (0, 1) (``--alphas``)."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"must list levels in (0, 1), e.g. 0.05,0.1, got {text!r}")
    values = []
    for item in items:
        try:
            values.append(level(item))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"must list numbers in (0, 1), got {item!r} in {text!r}") from None
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"must list distinct levels, got {text!r}")
    return tuple(values)


def number(*, above: float | None = None, at_least: float | None = None,
           below: float | None = None, at_most: float | None = None) -> Callable[[str], float]:
    """A finite number in the stated range (bounds open with ``above``/``below``, closed with
    ``at_least``/``at_most``)."""
    parts = ([f"> {above:g}"] if above is not None else []) + ([f">= {at_least:g}"] if at_least is not None else [])
    parts += ([f"< {below:g}"] if below is not None else []) + ([f"<= {at_most:g}"] if at_most is not None else [])
    wanted = " and ".join(parts)

    def parse(text: str) -> float:
        value = _float(text)
        if ((above is not None and not value > above) or (at_least is not None and not value >= at_least)
                or (below is not None and not value < below) or (at_most is not None and not value <= at_most)):
            raise argparse.ArgumentTypeError(f"must be a number {wanted}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def whole(*, at_least: int = 1) -> Callable[[str], int]:
    """A whole number ``>= at_least`` (counts, limits, threads)."""

    def parse(text: str) -> int:
        try:
            value = int(str(text).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {at_least}, got {text!r}") from None
        if value < at_least:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {at_least}, got {text!r}")
        return value

    parse.__name__ = "whole"
    return parse
