"""Which columns of a Likert table hold the judge's score-token logprobs (``--logprobs COLUMN|GLOB``, or found)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

from judgecp.base.errors import InputError, unknown
from judgecp.base.scale import LikertScale
from judgecp.data.fields import Fields, LogprobColumns
from judgecp.data.tables import Table

_TRAILING_INT = re.compile(r"^(.*?)(-?\d+)$")

#: The columns a plain table usually names each record field by (``--label``, ``--prediction``,
#: ``--logprobs`` override them), the first found wins.
SCORE_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "label": ("label", "gt_score", "human_score", "human_label"),
    "prediction": ("prediction", "parsed", "parsed_score", "judge_score"),
    "logprobs": ("logprobs", "score_logprobs")}


def logprob_columns(table: Table, fields: Fields, scale: LikertScale) -> LogprobColumns:
    """The object column, or the K token columns ordered by label (a glob, or found by their numbers)."""
    columns = table.names
    given = fields.logprobs
    flag = fields.flag("logprobs")
    if given is not None and given in table.columns:
        return LogprobColumns(object_column=given)
    if given is None:
        found = fields.pick(table, "logprobs", SCORE_COLUMNS)
        if found is not None and (table.shapes or any(isinstance(c, (dict, str)) for c in table.columns[found])):
            return LogprobColumns(object_column=found)
        groups: dict[str, dict[int, str]] = {}
        for c in columns:
            m = _TRAILING_INT.match(c)
            if m:
                groups.setdefault(m.group(1), {})[int(m.group(2))] = c
        wanted = {int(v) for v in scale.labels}
        candidates = [g for g in groups.values() if set(g) == wanted]
        if len(candidates) != 1:
            raise InputError(
                f"{table.source}: " + _no_logprob_columns(scale, groups, flag, columns, several=bool(candidates))
            )
        return LogprobColumns(by_token={str(v): candidates[0][int(v)] for v in scale.labels})
    matched = [c for c in columns if fnmatch.fnmatchcase(c, given)]
    if not matched:
        raise unknown(f"{flag} column or glob", given, columns)
    by_label: dict[int, str] = {}
    unnumbered = []
    for c in matched:
        m = _TRAILING_INT.match(c)
        if m is None:
            unnumbered.append(c)
            continue
        label = int(m.group(2))
        if label in by_label:
            raise InputError(f"{flag} {given!r}: columns {by_label[label]!r} and {c!r} both end in {label}")
        by_label[label] = c
    labels = [int(v) for v in scale.labels]
    missing = [v for v in labels if v not in by_label]
    extra = sorted(c for v, c in by_label.items() if v not in labels) + unnumbered
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"no column for label(s) {missing} of the scale {scale}")
        if extra:
            parts.append(f"column(s) {extra} are not labels of the scale {scale} (is --scale right?)")
        raise InputError(f"{flag} {given!r}: " + "; ".join(parts))
    return LogprobColumns(by_token={str(v): by_label[v] for v in labels})


def _no_logprob_columns(scale: LikertScale, groups: dict[str, dict[int, str]], flag: str, columns: list[str],
                        several: bool) -> str:
    """Why no logprob columns were found, and what to do (a numbered run of another scale says so)."""
    if not several:
        runs = [g for g in groups.values() if len(g) >= 2 and sorted(g) == list(range(min(g), max(g) + 1))]
        if len(runs) == 1:
            found = runs[0]
            return (f"--scale {scale} needs one logprob column per label {scale.minimum}..{scale.maximum}, but the "
                    f"numbered columns {found[min(found)]}..{found[max(found)]} are a {min(found)}:{max(found)} scale; "
                    f"is --scale right? (or pass {flag} GLOB)")
    return (
        f"cannot tell which columns hold the score-token logprobs of the scale {scale}"
        + (" (several candidates)" if several else "")
        + f"; pass {flag} GLOB (e.g. 'lp*') or {flag} COLUMN (of {{\"1\": lp, ...}} objects). Columns: "
          f"{', '.join(columns)}"
    )
