"""The alpha sweep of Likert and multiple-choice evaluations: the same study at several levels.

``--alphas 0.05,0.1,0.2`` (``Protocol.alphas``) reruns every method on the
same splits (same seeds, same calibration/test rows) at each level and puts
the split-averaged summaries in the report under ``alpha_sweep``::

    alpha_sweep: {alphas: [..], methods: {<spec>: {"<alpha>": {...}}}}

Levels are keys written with ``format(alpha, "g")`` (``"0.1"``), as for the
pairwise controllers; the headline ``alpha`` is always one of them and its
entry repeats the headline numbers (the splits are reused, not recomputed).
Likert entries have the headline's ``interval``, ``labels``, ``expanded``
summaries and ``full_range``; multiple-choice entries ``coverage``,
``coverage_std``, ``set_size``, ``set_size_std``, ``empty``. Without
``alphas`` the report has no ``alpha_sweep`` key and is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from judgecp.kinds.protocol import Protocol
from judgecp.kinds.registry import get_kind

#: The report key of the sweep.
SWEEP_KEY = "alpha_sweep"


def sweep_levels(protocol: Protocol) -> tuple[float, ...] | None:
    """The levels to sweep (``alphas`` plus the headline level, ascending), or ``None`` without ``alphas``."""
    if protocol.alphas is None:
        return None
    return tuple(sorted({*(float(a) for a in protocol.alphas), protocol.level}))


def level_key(alpha: float) -> str:
    return f"{alpha:g}"


def choice_sweep(
    protocol: Protocol, specs: Sequence[str], headline: dict[str, dict[str, Any]],
    run: Callable[[str, float], dict[str, Any]],
) -> dict[str, Any] | None:
    """Multiple choice: ``run(spec, alpha)`` gives a method's entry; the headline level reuses ``headline``."""
    levels = sweep_levels(protocol)
    if levels is None:
        return None
    keys = ("coverage", "coverage_std", "set_size", "set_size_std", "empty")
    out: dict[str, Any] = {"alphas": list(levels), "methods": {}}
    for spec in specs:
        out["methods"][spec] = {}
        for alpha in levels:
            entry = headline[spec] if alpha == protocol.level else run(spec, alpha)
            out["methods"][spec][level_key(alpha)] = {k: entry[k] for k in keys}
    return out


def write_sweep(report: dict[str, Any], out: Any) -> None:
    """The console table of a sweep: coverage / width (Likert: label sets) per method and level."""

    sweep = report.get(SWEEP_KEY)
    if not sweep:
        return
    keys = [level_key(a) for a in sweep["alphas"]]
    study = get_kind(str(report["kind"]), flag="the report's kind").study
    what = "label-set coverage / width" if report.get("scale") is not None else "coverage / set size"
    if (report.get("label_scale") or {}).get("continuous"):
        what = "interval coverage / width: continuous labels"
    out.write(f"\nAlpha sweep ({what}; target coverage 1 - alpha)\n")
    out.write(f"  {'method':40s}" + "".join(f" {'alpha ' + k:>15s}" for k in keys) + "\n")
    for spec, per in sweep["methods"].items():
        cells = []
        for k in keys:
            coverage, size = study.sweep_entry(per[k])
            cells.append(f" {coverage:7.3f} / {size:5.2f}")
        out.write(f"  {spec:40s}" + "".join(cells) + "\n")
