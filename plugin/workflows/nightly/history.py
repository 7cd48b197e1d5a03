"""Drift monitoring across nights: one anytime-valid test over every run a calibrator was applied to.

A per-run test at level 0.01, run every night for 100 nights on data that
never drifted, raises at least one false alarm with probability
``1 - 0.99^100 = 63%``. The monitor instead tests the whole history at once:
the stream is the calibration items' drift statistic (never bet on, so
their order plays no part), then night 1's run items (in a seeded random order), night 2's, ...
Each item gets its smoothed online conformal p-value among all items before
it (:func:`judgecp.stats.drift.pvalues_after`): independent and uniform while the
stream is exchangeable. Night ``t`` starts a mixture power martingale
``M^(t)`` (the one of :mod:`judgecp.stats.drift`: exponents ``e`` on a grid, large
and small values) that bets on every item from night ``t`` on; the monitor's
capital after night ``T`` is

    K_T = sum_{t <= T} w_t M^(t)_T + sum_{t > T} w_t,    w_t = 1 / (t (t + 1))

(the unstarted martingales' stakes held as cash): a test martingale, so by
Ville's inequality ``P(sup_T K_T >= 1/level) <= level`` over any number of
nights. Restarting every night keeps the test able to see a shift on night
200 after 199 quiet ones, which one martingale started at night 1 would not
(its capital decays while nothing happens). ``alarm`` is true from the
first night whose capital reached ``1/level`` (``first_alarm``) on;
``since_night`` is the night whose martingale carries the most evidence.

The history file (``judgecp apply ... --history H.jsonl``) has one JSON line
per night (:data:`SCHEMA`): the calibrator's fingerprint, the statistic,
level and seed, the night's values in the order they were bet on, and the
capital after it. Every night the whole stream is recomputed from the
stored values (the stored capitals must agree: a hand-edited file is
refused), and the file is rewritten atomically (a new file beside it,
renamed over it).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.base.errors import InputError
from judgecp.base.outputs import atomic_write_text
from judgecp.stats.drift import log_bets, log_mean_exp, pvalues_after

FloatArray = NDArray[np.float64]
SCHEMA = "judgecp.history/1"
#: Relative agreement required between a stored capital and the recomputed one (on the log scale).
_CAPITAL_TOLERANCE = 1e-6


def calibrator_fingerprint(cal: Any) -> str:
    """sha256 of what the monitor depends on: kind, method, alpha, calibration size and drift sample."""
    content = {"kind": cal.kind, "method": cal.method, "alpha": float(cal.alpha), "n": int(cal.n_calibration),
               "statistic": cal.drift_statistic, "values": [float(v) for v in np.sort(cal.drift_sample)]}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def weight(night: int) -> float:
    """The stake ``1 / (t (t + 1))`` of the martingale that starts at night ``t`` (they sum to 1)."""
    return 1.0 / (night * (night + 1))


@dataclass(frozen=True)
class Monitor:
    """The capital of the monitor after each night of a stream (module docstring)."""

    level: float
    log_capital: FloatArray  #: after each night
    since: NDArray[np.intp]  #: the night whose martingale holds the most capital, after each night

    @property
    def alarm_nights(self) -> NDArray[np.intp]:
        return np.flatnonzero(self.log_capital >= math.log(1.0 / self.level)) + 1

    def summary(self) -> dict[str, Any]:
        nights = self.log_capital.size
        alarms = self.alarm_nights
        capital = [float(math.exp(min(v, 700.0))) for v in self.log_capital]
        return {"test": "conformal test martingales restarted every night (Ville)", "level": self.level,
                "nights": nights, "capital": capital[-1] if capital else None,
                "max_capital": max(capital) if capital else None, "capital_by_night": capital,
                "alarm": bool(alarms.size), "first_alarm": int(alarms[0]) if alarms.size else None,
                "since_night": int(self.since[-1]) if nights else None}


def monitor(calibration: ArrayLike, nights: list[FloatArray], *, level: float, seed: int = 0) -> Monitor:
    """The monitor over ``nights`` (each night's values in the order they are bet on) after ``calibration``."""
    cal = np.asarray(calibration, dtype=np.float64)
    # The calibration items' own p-values are never bet on: later items need only their sorted values.
    seen = {sign: np.sort(sign * cal) for sign in (1.0, -1.0)}
    start_sums: list[FloatArray] = []  # cumulative log bets (both signs x grid) before each night starts
    cumulative = np.zeros(2 * log_bets(np.ones(1)).shape[1])
    logs, since = [], []
    for t, values in enumerate(nights, start=1):
        v = np.asarray(values, dtype=np.float64)
        u = np.random.default_rng([seed, t, 1]).uniform(size=(2, v.size))
        start_sums.append(cumulative.copy())
        night_bets = []
        for j, sign in enumerate((1.0, -1.0)):
            night_bets.append(log_bets(pvalues_after(seen[sign], sign * v, u[j])).sum(axis=0))
            seen[sign] = np.sort(np.concatenate([seen[sign], sign * v]), kind="stable")
        cumulative = cumulative + np.concatenate(night_bets)
        # log M^(s) for every started night s: the mixture of the bets made since night s began.
        log_m = log_mean_exp(cumulative[None, :] - np.asarray(start_sums), axis=1)
        log_w = np.log([weight(s) for s in range(1, t + 1)])
        parts = np.append(log_w + log_m, math.log(1.0 / (t + 1)))  # the unstarted stakes: 1/(t+1) in all
        top = float(parts.max())
        logs.append(top + math.log(float(np.exp(parts - top).sum())))
        since.append(int(np.argmax(log_w + log_m)) + 1)
    return Monitor(level, np.asarray(logs, dtype=np.float64), np.asarray(since, dtype=np.intp))


def night_order(values: ArrayLike, night: int, seed: int) -> FloatArray:
    """A night's values in the seeded random order they are bet on (the file's row order plays no part)."""
    v = np.asarray(values, dtype=np.float64)
    out: FloatArray = v[np.random.default_rng([seed, night]).permutation(v.size)]
    return out


# -- the history file --------------------------------------------------------------------------


def read_history(path: Path, fingerprint: str, statistic: str) -> list[dict[str, Any]]:
    """The nights of a history file, checked line by line; an InputError names the line and the field."""
    if not path.exists():
        return []
    if not path.is_file():
        raise InputError(f"--history {path}: not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--history {path}: cannot be read ({exc})") from exc
    nights: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"--history {path} line {number}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            from judgecp.workflows.results import describe_file

            what = describe_file(path)
            if what is not None:
                raise InputError(f"--history {path}: {what}, not a history file (the JSON lines apply --history "
                                 "writes; give a new path to start one)") from None
            raise InputError(f"{where}: not JSON ({exc})") from exc
        if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
            found = obj.get("schema") if isinstance(obj, dict) else type(obj).__name__
            raise InputError(f"{where}: not a judgecp history line (schema {found!r}, expected {SCHEMA!r})")
        if obj.get("calibrator") != fingerprint:
            raise InputError(f"{where}: written for another calibrator (fingerprint {str(obj.get('calibrator'))[:12]}, "
                             f"this one {fingerprint[:12]}); start a new history file for this calibrator")
        if obj.get("statistic") != statistic:
            raise InputError(f"{where}: statistic {obj.get('statistic')!r}, the calibrator's is {statistic!r}")
        _check_night(obj, where, len(nights) + 1, nights[0] if nights else None)
        nights.append(obj)
    return nights


def _check_night(obj: dict[str, Any], where: str, expected: int, first: dict[str, Any] | None) -> None:
    night, values = obj.get("night"), obj.get("values")
    if type(night) is not int or night != expected:
        raise InputError(f"{where}: night {night!r}, expected {expected} (nights are numbered 1, 2, ... in order)")
    if not isinstance(values, list) or not values or not all(
            type(v) in (int, float) and math.isfinite(v) for v in values):
        raise InputError(f"{where}: values must be a non-empty list of finite numbers")
    if obj.get("n") != len(values):
        raise InputError(f"{where}: n {obj.get('n')!r} but {len(values)} values")
    level, seed = obj.get("level"), obj.get("seed")
    if type(level) is not float or not 0.0 < level < 1.0 or type(seed) is not int:
        raise InputError(f"{where}: level must be a number in (0, 1) and seed an integer")
    if first is not None and (level, seed) != (first["level"], first["seed"]):
        raise InputError(f"{where}: level {level} and seed {seed} differ from night 1's "
                         f"({first['level']}, {first['seed']}); a history keeps one of each")
    capital = obj.get("log_capital")
    if not isinstance(capital, (int, float)) or isinstance(capital, bool) or not math.isfinite(capital):
        raise InputError(f"{where}: log_capital must be a finite number")


def record_night(path: str | Path, cal: Any, values: ArrayLike, *, level: float, seed: int = 0,
                 source: str = "") -> dict[str, Any]:
    """Append tonight's values to the history file at ``path`` and test the whole history (module docstring).

    The history's level and seed are night 1's (``level`` and ``seed`` start a
    new history). Returns the summary ``apply`` reports as ``history``.
    """
    p = Path(path)
    fingerprint = calibrator_fingerprint(cal)
    nights = read_history(p, fingerprint, cal.drift_statistic)
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        raise InputError(f"--history {p}: the run has no {cal.drift_statistic} value to add")
    if nights:
        level, seed = nights[0]["level"], nights[0]["seed"]
    tonight = len(nights) + 1
    stream = [np.asarray(n["values"], dtype=np.float64) for n in nights] + [night_order(v, tonight, seed)]
    result = monitor(cal.drift_sample, stream, level=level, seed=seed)
    for i, night in enumerate(nights):
        if abs(result.log_capital[i] - night["log_capital"]) > _CAPITAL_TOLERANCE * max(1.0, abs(night["log_capital"])):
            raise InputError(f"--history {p} line {i + 1}: its log_capital {night['log_capital']:.6g} does not follow "
                             f"from the stored values ({result.log_capital[i]:.6g}): the file was edited")
    line = {"schema": SCHEMA, "night": tonight, "calibrator": fingerprint, "statistic": cal.drift_statistic,
            "level": float(level), "seed": int(seed), "source": source, "n": int(v.size),
            "log_capital": float(result.log_capital[-1]), "alarm": bool(result.alarm_nights.size),
            "values": [float(x) for x in stream[-1]]}
    text = "".join(json.dumps(n) + "\n" for n in nights) + json.dumps(line) + "\n"
    atomic_write_text(p, text)  # never a half-written history
    out = result.summary()
    out.update(file=str(p), night=tonight, calibrator=fingerprint, n_items=int(sum(s.size for s in stream)))
    return out


