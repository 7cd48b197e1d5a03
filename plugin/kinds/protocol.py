"""The evaluation protocol shared by every kind, and the one parser of its settings.

A :class:`Protocol` says what to run: the level(s) ``alpha``/``alphas``, the
conformal ``methods`` (Likert, multiple choice) or risk ``controllers``
(pairwise), the number of random calibration/test ``splits`` and their
``random_state``, the calibration share ``cal_fraction``, and an optional
``mondrian`` field (group-conditional calibration) or ``group`` field
(per-group tables); for Likert judges, ``label_scale`` (labels given on
another scale than the judge's, :class:`judgecp.base.scale.LabelScale`: a
reading setting, which the harness glue applies when it builds the data
and :func:`judgecp.evaluate` checks was applied). :func:`parse_settings`
reads it from the command line, lm-eval's ``--metadata`` and VLMEvalKit's
dataset arguments alike; an error names the setting as the user spelled it
(``--cal-fraction``, ``metadata cal_fraction``).

Splits. Split ``i`` of a Likert, multiple-choice or PARC evaluation shuffles
the rows with ``numpy.random.default_rng(random_state + i)`` (or the seeds
listed in ``seeds``) and takes the first ``round(cal_fraction * n)`` to
calibrate. A pairwise evaluation (SCOPE: 1000 splits) draws all its splits
at once from ``default_rng(random_state)`` (:func:`split_matrix`). The same
data and protocol give the same report, byte for byte, whatever ``jobs``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, did_you_mean, unknown
from judgecp.base.scale import LabelScale
from judgecp.kinds import get_kind
from judgecp.kinds.registry import (
    check_method_spec,
    controller_classes,
    method_classes,
    missing_dependency,
)
from judgecp.stats.conformal import check_alpha
from judgecp.stats.methods.spec import split_method_list

#: Defaults that differ by kind are the kind's (:class:`judgecp.kinds.Kind`: ``default_splits``, ``default_methods``).
DEFAULT_ALPHAS = (0.05, 0.10, 0.15, 0.20, 0.25)
DEFAULT_CONTROLLERS = ("scope", "clopper_pearson", "naive", "heuristic", "vanilla")
SIGNALS = ("bpe", "predictive", "verbalized", "agreement")
REFERENCES = ("variation", "original")
#: More splits than this is a typo, not a protocol (and would not fit in memory for pairs).
MAX_SPLITS = 100_000


@dataclass(frozen=True)
class Protocol:
    """What to run (see the module docstring); ``None`` means the kind's default."""

    alpha: float | None = None
    alphas: tuple[float, ...] | None = None
    methods: tuple[str, ...] | None = None
    splits: int | None = None
    seeds: tuple[int, ...] | None = None
    random_state: int = 0
    cal_fraction: float = 0.5
    mondrian: str | None = None
    group: str | None = None
    signal: str = "bpe"
    controllers: tuple[str, ...] | None = None
    delta: float = 0.1
    reference: str = "variation"
    jobs: int = 1
    #: The labels' own scale when it is not the judge's (Likert; applied when the data are read).
    label_scale: LabelScale | None = None
    #: Methods that ``all`` had to leave out (missing optional dependency): ``(name, reason)``.
    skipped: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        _check_settings(self, lambda name: name)

    @property
    def level(self) -> float:
        """The headline level (``alpha``, default 0.1)."""
        return 0.1 if self.alpha is None else float(self.alpha)

    def levels(self, kind: str) -> tuple[float, ...]:
        """The levels a kind sweeps: pairwise controllers run at every one (the headline's included)."""

        if get_kind(kind).study.levels_are_controller_levels:
            base = self.alphas or DEFAULT_ALPHAS
            return base if self.alpha is None or self.alpha in base else tuple(sorted({*base, float(self.alpha)}))
        return self.alphas or (self.level,)

    def split_seeds(self, kind: str) -> tuple[int, ...]:
        """The seeds of the splits (``seeds``, or ``random_state .. random_state + splits - 1``)."""
        if self.seeds is not None:
            return self.seeds

        n = self.splits if self.splits is not None else get_kind(kind).study.default_splits
        return tuple(range(self.random_state, self.random_state + n))

    def n_splits(self, kind: str) -> int:
        return len(self.split_seeds(kind))

    def method_specs(self, kind: str) -> tuple[str, ...]:

        return self.methods if self.methods is not None else get_kind(kind).study.default_methods

    def controller_names(self) -> tuple[str, ...]:
        return self.controllers if self.controllers is not None else DEFAULT_CONTROLLERS

    def with_(self, **changes: Any) -> Protocol:
        return replace(self, **changes)


def _check_settings(p: Protocol, spell: Callable[[str], str]) -> None:

    for name, value in (("alpha", p.alpha), ("cal_fraction", p.cal_fraction), ("delta", p.delta)):
        if value is not None and not (isinstance(value, (int, float)) and 0.0 < float(value) < 1.0):
            raise InputError(f"{spell(name)} must be a number in (0, 1), got {value!r}")
    for a in p.alphas or ():
        try:
            check_alpha(a)
        except InputError as exc:
            raise InputError(f"{spell('alphas')}: every level must be in (0, 1), got {a!r}") from exc
    if p.alphas is not None and (not p.alphas or len(set(p.alphas)) != len(p.alphas)):
        raise InputError(f"{spell('alphas')} must be distinct levels, got {list(p.alphas)}")
    if p.splits is not None and not 1 <= p.splits <= MAX_SPLITS:
        raise InputError(f"{spell('splits')} must be between 1 and {MAX_SPLITS}, got {p.splits}")
    if p.seeds is not None and (not p.seeds or len(set(p.seeds)) != len(p.seeds) or len(p.seeds) > MAX_SPLITS):
        raise InputError(f"{spell('seeds')} must list distinct seeds (at most {MAX_SPLITS}), got {list(p.seeds)[:10]}")
    if p.random_state < 0:  # numpy's generators take none below 0
        raise InputError(f"{spell('random_state')} must be a whole number >= 0, got {p.random_state}")
    if p.seeds is not None and min(p.seeds) < 0:
        raise InputError(f"{spell('seeds')}: every seed must be a whole number >= 0, got {min(p.seeds)}")
    if p.jobs < 1:
        raise InputError(f"{spell('jobs')} must be at least 1, got {p.jobs}")
    if p.reference not in REFERENCES:
        raise InputError(f"{spell('reference')} must be one of {', '.join(REFERENCES)}, got {p.reference!r}")
    if p.signal not in SIGNALS:
        raise unknown(spell("signal"), p.signal, SIGNALS)
    if p.methods is not None and not p.methods:
        raise InputError(f"{spell('methods')} is empty")
    if p.methods is not None and len(set(p.methods)) != len(p.methods):
        raise InputError(f"{spell('methods')} lists a method twice: {list(p.methods)}")
    if p.controllers is not None and (not p.controllers or len(set(p.controllers)) != len(p.controllers)):
        raise InputError(f"{spell('controllers')} must be distinct names, got {list(p.controllers)}")
    if p.mondrian is not None and p.group is not None and p.mondrian != p.group:
        raise InputError(f"give {spell('mondrian')} or {spell('group')}, not both (Mondrian tables are per group)")


# -- the one settings parser ------------------------------------------------------------------

#: Canonical setting -> accepted spellings (the first is the documented one).
SETTINGS: dict[str, tuple[str, ...]] = {
    "alpha": ("alpha",),
    "alphas": ("alphas",),
    "methods": ("methods",),
    "splits": ("splits", "n_splits"),
    "seeds": ("seeds",),
    "random_state": ("random_state", "seed"),
    "cal_fraction": ("cal_fraction",),
    "mondrian": ("mondrian",),
    "group": ("group",),
    "signal": ("signal",),
    "controllers": ("controllers",),
    "delta": ("delta",),
    "reference": ("reference",),
    "jobs": ("jobs",),
    "label_scale": ("label_scale",),
}
_ALIASES = {alias: name for name, aliases in SETTINGS.items() for alias in aliases}
def _number(value: Any, name: str, integer: bool = False) -> Any:
    if isinstance(value, bool):
        raise InputError(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a number, got {value!r}") from exc
    if math.isnan(number) or math.isinf(number):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    if integer:
        if number != int(number):
            raise InputError(f"{name} must be a whole number, got {value!r}")
        return int(number)
    return number


def _items(value: Any) -> list[str]:
    """A list setting given as a list or as comma-separated text (method specs keep their parentheses)."""

    if isinstance(value, str):
        return split_method_list(value)
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [str(value)]


def _seeds(value: Any, name: str) -> tuple[int, ...] | int:
    """``seeds``: a count (``10``) or a list (``"0,3,7"``, ``[0, 3, 7]``)."""
    if isinstance(value, str) and "," not in value:
        value = value.strip()
    if isinstance(value, (int, float, str)) and not (isinstance(value, str) and "," in value):
        return int(_number(value, name, integer=True))
    return tuple(int(_number(v, name, integer=True)) for v in _items(value))


def misspelled_settings(keys: Iterable[str], *, also: Iterable[str] = ()) -> list[tuple[str, str]]:
    """``(key, "; did you mean 'x'?")`` for each key that is no setting (nor in ``also``) but is close to one.

    For harnesses whose settings share a namespace with other keys (lm-eval's
    ``--metadata``): an unknown key is not an error there, a near-miss deserves a warning.
    """
    known = set(_ALIASES) | set(also)
    hints = [(key, did_you_mean(key, list(_ALIASES))) for key in keys if key not in known]
    return [(key, hint) for key, hint in hints if hint]


def parse_settings(
    values: Mapping[str, Any],
    *,
    kind: str,
    spell: Callable[[str], str] = lambda name: name,
    ignore_unknown: bool = True,
    other_kinds: str = "error",
) -> Protocol:
    """A :class:`Protocol` from settings given by name (``None`` values are left at their defaults).

    Accepts the documented names of :data:`SETTINGS` and their aliases;
    ``spell(name)`` is how an error names a setting (``--cal-fraction``).
    A setting the kind does not use is an error (it would be ignored), or
    left out with ``other_kinds="ignore"`` (lm-eval's ``--metadata`` goes to
    every task of a run, of every kind); with ``ignore_unknown=False`` an
    unknown name is an error too.
    """

    uses = get_kind(kind).study.settings
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        name = _ALIASES.get(key)
        if name is None:
            if not ignore_unknown:
                raise unknown("setting", key, SETTINGS)
            continue
        if name not in uses:
            if other_kinds == "ignore":
                continue
            raise InputError(f"{spell(name)} does not apply to kind {kind!r}")
        label = spell(name)
        if name in ("alpha", "cal_fraction", "delta"):
            out[name] = _number(value, label)
        elif name == "alphas":
            out[name] = tuple(_number(v, label) for v in _items(value))
        elif name in ("splits", "random_state", "jobs"):
            out[name] = _number(value, label, integer=True)
        elif name == "seeds":
            seeds = _seeds(value, label)
            if isinstance(seeds, int):
                out["splits"] = seeds
            else:
                out["seeds"] = seeds
        elif name == "methods":
            specs, skipped = resolve_methods(_items(value), kind=kind, spell=label)
            out["methods"], out["skipped"] = tuple(specs), tuple(skipped)
        elif name == "controllers":
            out[name] = tuple(_items(value))
        elif name == "label_scale":
            out[name] = value if isinstance(value, LabelScale) else LabelScale.parse(value, flag=label)
        else:
            out[name] = str(value)
    try:
        protocol = Protocol(**out)
    except InputError:
        # The same check once more, naming the settings as the user spelled them.
        defaults = {f.name: f.default for f in dataclass_fields(Protocol)}
        _check_settings(SimpleNamespace(**{**defaults, **out}), spell)  # type: ignore[arg-type]
        raise
    for c in protocol.controllers or ():

        classes = controller_classes()
        if c not in classes:
            raise unknown(f"{spell('controllers')} name", c, classes)
    return protocol


def resolve_methods(
    items: Sequence[str], *, kind: str, spell: str = "methods"
) -> tuple[list[str], list[tuple[str, str]]]:
    """Method specs (canonical form) to run, and the ones ``all`` had to skip (missing optional dependency).

    ``all`` stands for every registered method the kind can use, at its
    defaults, and may be combined with further specs. An unknown name or
    parameter is an error naming the method's parameters.
    """

    specs: list[str] = []
    skipped: list[tuple[str, str]] = []
    for item in items:
        if item == "all":
            for name, cls in method_classes().items():
                if not get_kind(kind).study.accepts_method(cls):
                    continue
                missing = missing_dependency(cls)
                if missing is None:
                    specs.append(name)
                else:
                    skipped.append((name, str(missing)))
            continue
        specs.append(check_method_spec(item, kind=kind, flag=spell))
    return specs, skipped


# -- splits ------------------------------------------------------------------------------------


def split_indices(n: int, seed: int, cal_fraction: float) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """One calibration/test split: ``default_rng(seed).permutation(n)``, the first share calibrates."""
    perm = np.random.default_rng(seed).permutation(n)
    n_cal = min(max(round(cal_fraction * n), 1), n - 1)
    return perm[:n_cal], perm[n_cal:]


def split_matrix(n: int, n_splits: int, cal_fraction: float, seed: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``(splits, n_cal)`` and ``(splits, n_test)`` index matrices, one random split per row."""
    rng = np.random.default_rng(seed)
    perms = rng.permuted(np.tile(np.arange(n), (n_splits, 1)), axis=1)
    n_cal = min(max(round(cal_fraction * n), 1), n - 1)
    return perms[:, :n_cal], perms[:, n_cal:]
