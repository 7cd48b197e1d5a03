"""The rating scale of a Likert judge."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError

#: Most labels a rating scale may have (0..100 is the widest in use). Arrays are n x K, so a scale of
#: a billion labels would ask for gigabytes per row before any check could say that it is a typo.
MAX_LABELS = 101


@dataclass(frozen=True)
class LikertScale:
    """Integer rating scale ``minimum..maximum`` (default 1..5).

    The judge's score tokens are the labels written as decimal strings
    (``"1"``..``"5"``); class index ``j`` stands for label ``minimum + j``.
    """

    minimum: int = 1
    maximum: int = 5

    def __post_init__(self) -> None:
        if int(self.minimum) != self.minimum or int(self.maximum) != self.maximum:
            raise InputError(f"scale bounds must be integers, got {self.minimum}..{self.maximum}")
        if self.maximum <= self.minimum:
            raise InputError(
                f"scale needs at least two labels, got {self.minimum}..{self.maximum}"
            )
        if self.maximum - self.minimum + 1 > MAX_LABELS:
            raise InputError(f"scale {self.minimum}:{self.maximum} has {self.maximum - self.minimum + 1:,} labels; "
                             f"judgecp takes at most {MAX_LABELS} (e.g. 0:100)")

    @classmethod
    def parse(cls, text: str) -> LikertScale:
        """Parse ``"MIN:MAX"`` (e.g. ``"1:5"``, ``"0:10"``) or ``"K"`` (meaning 1..K)."""
        head, sep, tail = text.strip().partition(":")
        try:
            bounds = (int(head), int(tail)) if sep else (1, int(head))
        except ValueError as exc:
            raise InputError(f"cannot read scale {text!r}; write it as MIN:MAX, e.g. 1:5") from exc
        return cls(*bounds)

    @property
    def k(self) -> int:
        """Number of labels."""
        return self.maximum - self.minimum + 1

    @property
    def labels(self) -> NDArray[np.int64]:
        return np.arange(self.minimum, self.maximum + 1, dtype=np.int64)

    @property
    def tokens(self) -> tuple[str, ...]:
        """The score tokens, as the judge writes them."""
        return tuple(str(v) for v in range(self.minimum, self.maximum + 1))

    @property
    def span(self) -> int:
        """Width of the full range, ``maximum - minimum`` (4 on 1..5)."""
        return self.maximum - self.minimum

    def index(self, labels: NDArray[Any]) -> NDArray[np.int64]:
        """Class index of integer labels on this scale."""
        return (np.asarray(labels) - self.minimum).astype(np.int64)

    def __str__(self) -> str:
        return f"{self.minimum}:{self.maximum}"


#: Mapped labels within this distance of an integer are that integer (float error of the affine map).
INTEGER_TOLERANCE = 1e-9


@dataclass(frozen=True)
class LabelScale:
    """The range ``low..high`` human labels are given on, when it is not the judge's rating scale.

    Labels are real numbers on ``[low, high]`` (Polaris: an average of
    annotators on ``[0, 1]``); :meth:`to_judge` maps them onto the judge's
    scale by the affine map ``low -> minimum``, ``high -> maximum``:
    ``y' = minimum + (y - low) (maximum - minimum) / (high - low)``. Non-integer
    labels are kept (continuous labels: interval methods only); a mapped label
    within :data:`INTEGER_TOLERANCE` of an integer is that integer. A width on
    the judge's scale is :meth:`width_in_label_units` in the labels' own units.
    """

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise InputError(f"label scale bounds must be finite numbers, got {self.low}:{self.high}")
        if self.high <= self.low:
            raise InputError(f"label scale needs LO < HI, got {self.low:g}:{self.high:g}")

    @classmethod
    def parse(cls, text: Any, flag: str = "--label-scale") -> LabelScale:
        """Parse ``"LO:HI"`` (e.g. ``"0:1"``, ``"1:5"``) or a two-item list ``[LO, HI]``."""
        parts = list(text) if isinstance(text, (list, tuple)) else str(text).strip().split(":")
        try:
            low, high = (float(p) for p in parts) if len(parts) == 2 else (math.nan, math.nan)
        except (TypeError, ValueError):
            low = high = math.nan
        if math.isnan(low) or math.isnan(high):
            raise InputError(f"{flag}: cannot read {text!r}; write it as LO:HI, e.g. 0:1")
        try:
            return cls(low, high)
        except InputError as exc:
            raise InputError(f"{flag}: {exc}") from None

    def to_judge(self, labels: Any, scale: LikertScale) -> NDArray[np.float64]:
        """Labels on ``[low, high]`` mapped onto ``scale`` (NaN stays NaN; near-integers snapped)."""
        y = np.asarray(labels, dtype=np.float64)
        mapped = scale.minimum + (y - self.low) * (scale.span / (self.high - self.low))
        with np.errstate(invalid="ignore"):
            near = np.abs(mapped - np.round(mapped)) <= INTEGER_TOLERANCE
        out: NDArray[np.float64] = np.where(near, np.round(mapped), mapped)
        return out

    def from_judge(self, labels: Any, scale: LikertScale) -> NDArray[np.float64]:
        """Labels on ``scale`` mapped back onto ``[low, high]`` (the inverse of :meth:`to_judge`, clipped to it)."""
        y = np.asarray(labels, dtype=np.float64)
        out: NDArray[np.float64] = np.clip(self.low + (y - scale.minimum) * ((self.high - self.low) / scale.span),
                                           self.low, self.high)
        return out

    def width_in_label_units(self, width: float, scale: LikertScale) -> float:
        """A width on the judge's scale, in the labels' units (``width (high - low) / (maximum - minimum)``)."""
        return float(width) * (self.high - self.low) / scale.span

    def describe(self, scale: LikertScale) -> str:
        """The map as one line, e.g. ``label 0:1 -> judge scale 1:5, y' = 1 + 4 (y - 0) / 1``."""
        return (f"labels on {self}, mapped to the judge's scale {scale} by y' = {scale.minimum} + "
                f"{scale.span} (y - {self.low:g}) / {self.high - self.low:g}")

    def to_json(self) -> list[float]:
        return [self.low, self.high]

    def __str__(self) -> str:
        return f"{self.low:g}:{self.high:g}"


def label_scale_hint(scale: LikertScale) -> str:
    """What to do when most labels are off the judge's scale (a report's warning, a reader's error)."""
    return (f"if the labels are on another scale than the judge's {scale} (e.g. averaged scores on 0:1), pass "
            "--label-scale LO:HI (lm-eval metadata / VLMEvalKit dataset argument label_scale) to map them onto it")
