"""The rating scale of a Likert judge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.errors import InputError

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
