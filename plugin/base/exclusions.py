"""Counted, reported exclusions and flags: nothing is dropped silently."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_EXAMPLES = 5


@dataclass
class Exclusions:
    """Rows left out of an evaluation, counted by reason, with a few example ids.

    Reported in JSON as ``[{"reason": ..., "count": ..., "examples": [...]}]``.
    """

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    #: A hint per reason for the commands' output (``label_off_scale``: the scale the labels look like); not in
    #: :meth:`to_json`, which reports keep as they are.
    notes: dict[str, str] = field(default_factory=dict)

    def add(self, reason: str, example: object | None = None, count: int = 1) -> None:
        # Reasons may come from data (an adapter's ``exclude`` cell): one line, whitespace folded,
        # so every report and error that lists them stays one line.
        reason = " ".join(str(reason).split()) or "exclude_blank"
        self.counts[reason] += count
        if example is not None:
            shown = self.examples.setdefault(reason, [])
            if len(shown) < MAX_EXAMPLES:
                shown.append(str(example))

    def add_rows(self, reason: str, mask: Any, ids: Any) -> None:
        """Count the rows of a boolean ``mask`` under ``reason``, the first ids (in row order) as examples."""
        rows = np.flatnonzero(mask)
        if not rows.size:
            return
        shown = [str(ids[i]) for i in rows[:MAX_EXAMPLES].tolist()]
        for example in shown:
            self.add(reason, example)
        if rows.size > len(shown):
            self.add(reason, count=int(rows.size) - len(shown))

    def merge(self, other: Exclusions) -> None:
        for reason, note in other.notes.items():
            self.notes.setdefault(reason, note)
        for reason, count in other.counts.items():
            self.counts[reason] += count
            shown = self.examples.setdefault(reason, [])
            for ex in other.examples.get(reason, []):
                if len(shown) < MAX_EXAMPLES:
                    shown.append(ex)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def __bool__(self) -> bool:
        return self.total > 0

    def to_json(self, key: str = "reason") -> list[dict[str, Any]]:
        return [
            {key: reason, "count": count, "examples": self.examples.get(reason, [])}
            for reason, count in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ]


def left_out_lines(excluded: list[dict[str, Any]], notes: dict[str, str] | None = None) -> list[str]:
    """The commands' console lines for rows left out: ``left out: label_off_scale 148; labels look like 0..1:
    --label-scale 0:1?`` (one line per reason, with its hint)."""
    out = []
    for e in excluded:
        note = (notes or {}).get(str(e["reason"]))
        out.append(f"left out: {e['reason']} {e['count']}" + (f"; {note}" if note else ""))
    return out
