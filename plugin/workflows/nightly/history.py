"""Drift detection across nights: a change detector over every run a calibrator was applied to.

The stream is the calibration items' drift statistic (never bet on, so their
order plays no part), then night 1's run items (in a seeded random order),
night 2's, ... Each item gets its smoothed online conformal p-value among
all items before it (:func:`judgecp.stats.drift.pvalues_after`): independent and
uniform while the stream is exchangeable, whatever the judge's score
distribution is.

Night ``s`` starts a test martingale ``M^(s)`` that bets on every item from
night ``s`` on with the mixture of :func:`judgecp.stats.drift.mixture_log_lr`: half
on a Polya tree (bets placed with the items since night ``s`` only, so they
learn the changed distribution from the change on), a quarter on
exponential tilts (the judge scores higher or lower), a quarter on beta
densities (a tail that empties or fills, more or fewer extreme scores). It
pays on any change of the judge's score distribution: a task whose scores
miss the low tail, or pile up in the middle, a judge grown more lenient, not
only extreme ranks. The detector after night ``T`` is the Shiryaev-Roberts
e-detector (Shin, Ramdas & Rinaldo 2023)

    R_T = sum_{s <= T} M^(s)_T.

It alarms from the first night with ``R_T >= A``, where ``A = horizon /
level`` (the history's level and horizon are night 1's; defaults 0.01 and
:data:`DEFAULT_HORIZON` nights: ``A = 10,000``). The guarantee, without
drift: ``R_T - T`` is a martingale, so ``R_T`` is a non-negative
submartingale with mean ``T`` and by Doob's inequality

    P(an alarm within the first T nights) <= T / A

(at most ``level`` within the horizon), and the average run length to a
false alarm is at least ``A`` nights. Unlike a test over all nights (one
martingale, or a weighted sum of restarted ones, whose alarm ever comes with
probability at most the level), the detector's evidence from a change on
night 26 needs only to reach ``A``, not ``A`` times the weight of night 26:
the monitor this replaced staked ``1/(t(t+1))`` on night ``t`` and needed
70,200 times the evidence after 25 quiet nights at level 0.01 (issue 32).
The price: a history left running for ever will alarm some day without
drift (on average not before ``A`` nights); start a new one with each new
calibrator.

``since_night`` is the night whose martingale holds the most evidence: the
detector's estimate of when the change began.

The history file (``judgecp apply ... --history H.jsonl``) has one JSON line
per night (:data:`SCHEMA`): the calibrator's fingerprint, the statistic,
level, horizon and seed, the night's values in the order they were bet on,
their digest (sha256 of the values sorted) and the detector's log evidence
after it. Every night the whole stream is recomputed from the stored values
(the stored evidence must agree: a hand-edited file is refused); a night
whose values are those of a night already in the file is not added again
(the summary names that night); the file is rewritten atomically (a new file
beside it, renamed over it) while the history's folder is locked, so runs
sharing a history record their nights one after the other and none is lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.base.digest import content_digest, with_digest
from judgecp.base.errors import InputError
from judgecp.base.outputs import atomic_write_text
from judgecp.stats.drift import SUMS, TREE_DEPTH, bet_statistics, mixture_log_lr, pvalues_after
from judgecp.workflows.results import describe_file

if sys.platform != "win32":
    import fcntl

FloatArray = NDArray[np.float64]
SCHEMA = "judgecp.history/2"
#: Histories of earlier judgecp versions: refused, with how to start a new one.
OLD_SCHEMAS = {"judgecp.history/1": "the across-nights test before issue 32, which missed most drift that starts "
                                    "after quiet nights"}
#: Nights within which a false alarm has probability at most the level (the alarm threshold is horizon / level).
DEFAULT_HORIZON = 100
#: What the summary calls the test.
TEST = ("Shiryaev-Roberts e-detector over nights (conformal p-values; Polya-tree, tilt and beta bets, restarted "
        "every night)")
#: Relative agreement required between a stored log evidence and the recomputed one.
_EVIDENCE_TOLERANCE = 1e-6


def calibrator_fingerprint(cal: Any) -> str:
    """sha256 of what the monitor depends on: kind, method, alpha, calibration size and drift sample."""
    content = {"kind": cal.kind, "method": cal.method, "alpha": float(cal.alpha), "n": int(cal.n_calibration),
               "statistic": cal.drift_statistic, "values": [float(v) for v in np.sort(cal.drift_sample)]}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def night_digest(values: ArrayLike) -> str:
    """sha256 of a night's values sorted (as 64-bit floats): the same night in any row order has one digest."""
    v = np.sort(np.asarray(values, dtype=np.float64)) + 0.0  # + 0.0: -0.0 and 0.0 are one value
    return hashlib.sha256(v.astype("<f8").tobytes()).hexdigest()


@dataclass(frozen=True)
class Detector:
    """The detector after each night of a stream (module docstring)."""

    level: float
    horizon: int
    log_evidence: FloatArray  #: ``log R_T`` after each night
    since: NDArray[np.intp]  #: the night whose martingale holds the most evidence, after each night

    @property
    def threshold(self) -> float:
        """The alarm threshold ``A = horizon / level``."""
        return self.horizon / self.level

    @property
    def alarm_nights(self) -> NDArray[np.intp]:
        return np.flatnonzero(self.log_evidence >= math.log(self.threshold)) + 1

    def summary(self) -> dict[str, Any]:
        nights = self.log_evidence.size
        alarms = self.alarm_nights
        evidence = [float(math.exp(min(v, 700.0))) for v in self.log_evidence]
        return {"test": TEST,
                "guarantee": (f"without drift, P(an alarm within the first T nights) <= T / {self.threshold:g} "
                              f"(<= {self.level:g} within {self.horizon} nights); average run length to a false "
                              f"alarm >= {self.threshold:g} nights"),
                "level": self.level, "horizon": self.horizon, "threshold": self.threshold, "nights": nights,
                "false_alarm_bound": min(1.0, nights / self.threshold),
                "evidence": evidence[-1] if evidence else None, "max_evidence": max(evidence) if evidence else None,
                "evidence_by_night": evidence, "alarm": bool(alarms.size),
                "first_alarm": int(alarms[0]) if alarms.size else None,
                "since_night": int(self.since[-1]) if nights else None}


def night_statistics(calibration: ArrayLike, nights: list[FloatArray], *, seed: int = 0) -> FloatArray:
    """The :func:`judgecp.stats.drift.bet_statistics` of each night's p-values, one row per night.

    Each item's p-value is its smoothed online conformal p-value among the
    calibration items, the earlier nights' items and the night's items
    before it (in the order given); ties are broken by uniforms seeded by
    ``(seed, night)``.
    """
    seen = np.sort(np.asarray(calibration, dtype=np.float64))
    rows = []
    for t, values in enumerate(nights, start=1):
        v = np.asarray(values, dtype=np.float64)
        u = np.random.default_rng([seed, t, 1]).uniform(size=v.size)
        rows.append(bet_statistics(pvalues_after(seen, v, u)))
        seen = np.sort(np.concatenate([seen, v]), kind="stable")
    return np.asarray(rows, dtype=np.float64).reshape(len(nights), 2**TREE_DEPTH + len(SUMS))


def shiryaev_roberts(statistics: ArrayLike) -> tuple[FloatArray, NDArray[np.intp]]:
    """``log R_T`` after each night from the nights' bet statistics, and the start night with the most evidence.

    ``statistics``: one row of :func:`judgecp.stats.drift.bet_statistics` per night (last two axes: nights,
    statistics; leading axes, if any, are independent streams, as in a simulation). ``M^(s)_T`` depends on
    the items of nights ``s..T`` only through the sums of their statistics, so every start's martingale is
    one :func:`judgecp.stats.drift.mixture_log_lr` of a difference of cumulative sums.
    """
    c = np.asarray(statistics, dtype=np.float64)
    nights = c.shape[-2]
    zero = np.zeros((*c.shape[:-2], 1, c.shape[-1]))
    cumulative = np.concatenate([zero, np.cumsum(c, axis=-2)], axis=-2)
    log_r = np.empty(c.shape[:-1])
    since = np.empty(c.shape[:-1], dtype=np.intp)
    for t in range(1, nights + 1):
        log_m = mixture_log_lr(cumulative[..., t : t + 1, :] - cumulative[..., :t, :])  # M^(s)_t, s = 1..t
        top = log_m.max(axis=-1)
        log_r[..., t - 1] = top + np.log(np.exp(log_m - top[..., None]).sum(axis=-1))
        since[..., t - 1] = np.argmax(log_m, axis=-1) + 1
    return log_r, since


def monitor(calibration: ArrayLike, nights: list[FloatArray], *, level: float, horizon: int = DEFAULT_HORIZON,
            seed: int = 0) -> Detector:
    """The detector over ``nights`` (each night's values in the order they are bet on) after ``calibration``."""
    log_r, since = shiryaev_roberts(night_statistics(calibration, nights, seed=seed))
    return Detector(level, horizon, log_r, since)


def night_order(values: ArrayLike, night: int, seed: int) -> FloatArray:
    """A night's values in the seeded random order they are bet on (the file's row order plays no part)."""
    v = np.asarray(values, dtype=np.float64)
    out: FloatArray = v[np.random.default_rng([seed, night]).permutation(v.size)]
    return out


# -- the history file --------------------------------------------------------------------------


@contextlib.contextmanager
def history_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on the history's folder while a night is read, recomputed and written.

    Two or three ``apply --history`` runs on one file then record their
    nights one after the other (distinct, consecutive numbers) instead of
    each rewriting the file it read (the last rename would win and the
    others' nights be lost). The lock is ``flock`` on the folder itself (the
    history file is replaced by a rename, so it cannot carry the lock): no
    lock file is left behind. Windows has no such lock: run one apply per
    history at a time there.
    """
    if sys.platform == "win32":  # pragma: no cover - no flock on Windows
        yield
        return
    folder = Path(os.path.realpath(path)).parent
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError as exc:
        raise InputError(f"--history {path}: its folder cannot be opened ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


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
            what = describe_file(path)
            if what is not None:
                raise InputError(f"--history {path}: {what}, not a history file (the JSON lines apply --history "
                                 "writes; give a new path to start one)") from None
            raise InputError(f"{where}: not JSON ({exc})") from exc
        found = obj.get("schema") if isinstance(obj, dict) else type(obj).__name__
        if isinstance(found, str) and found in OLD_SCHEMAS:
            raise InputError(f"{where}: a {found} history ({OLD_SCHEMAS[found]}); it cannot be continued: "
                             "give --history a new file to start a new history (this one is left as it is)")
        if not isinstance(obj, dict) or found != SCHEMA:
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
    level, horizon, seed = obj.get("level"), obj.get("horizon"), obj.get("seed")
    if type(level) is not float or not 0.0 < level < 1.0 or type(seed) is not int:
        raise InputError(f"{where}: level must be a number in (0, 1) and seed an integer")
    if type(horizon) is not int or horizon < 1:
        raise InputError(f"{where}: horizon must be a whole number of nights >= 1")
    if first is not None and (level, horizon, seed) != (first["level"], first["horizon"], first["seed"]):
        raise InputError(f"{where}: level {level}, horizon {horizon} and seed {seed} differ from night 1's "
                         f"({first['level']}, {first['horizon']}, {first['seed']}); a history keeps one of each")
    if obj.get("digest") != night_digest(values):
        raise InputError(f"{where}: its digest does not match its values: the file was edited")
    evidence = obj.get("log_evidence")
    if not isinstance(evidence, (int, float)) or isinstance(evidence, bool) or not math.isfinite(evidence):
        raise InputError(f"{where}: log_evidence must be a finite number")


def record_night(path: str | Path, cal: Any, values: ArrayLike, *, level: float, horizon: int = DEFAULT_HORIZON,
                 seed: int = 0, source: str = "") -> dict[str, Any]:
    """Add tonight's values to the history file at ``path`` and run the detector over it (module docstring).

    The history's level, horizon and seed are night 1's (``level``,
    ``horizon`` and ``seed`` start a new history). Tonight's values, when
    they are those of a night already in the file (same digest), are not
    added again: the summary's ``recorded`` is false and ``duplicate_of``
    names that night. Returns the summary ``apply`` reports as ``history``.
    """
    p = Path(path)
    fingerprint = calibrator_fingerprint(cal)
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        raise InputError(f"--history {p}: the run has no {cal.drift_statistic} value to add")
    if p.exists() and not p.is_file():
        raise InputError(f"--history {p}: not a file")
    digest = night_digest(v)
    with history_lock(p):
        nights = read_history(p, fingerprint, cal.drift_statistic)
        if nights:
            level, horizon, seed = nights[0]["level"], nights[0]["horizon"], nights[0]["seed"]
        duplicate = next((n["night"] for n in nights if n["digest"] == digest), None)
        stream = [np.asarray(n["values"], dtype=np.float64) for n in nights]
        if duplicate is None:
            stream.append(night_order(v, len(nights) + 1, seed))
        result = monitor(cal.drift_sample, stream, level=level, horizon=horizon, seed=seed)
        for i, night in enumerate(nights):
            stored = night["log_evidence"]
            if abs(result.log_evidence[i] - stored) > _EVIDENCE_TOLERANCE * max(1.0, abs(stored)):
                raise InputError(f"--history {p} line {i + 1}: its log_evidence {stored:.6g} does not follow "
                                 f"from the stored values ({result.log_evidence[i]:.6g}): the file was edited")
        if duplicate is None:
            line = {"schema": SCHEMA, "night": len(stream), "calibrator": fingerprint,
                    "statistic": cal.drift_statistic, "level": float(level), "horizon": int(horizon),
                    "seed": int(seed), "source": source, "digest": digest, "n": int(v.size),
                    "log_evidence": float(result.log_evidence[-1]), "alarm": bool(result.alarm_nights.size),
                    "values": [float(x) for x in stream[-1]]}
            text = "".join(json.dumps(n) + "\n" for n in nights) + json.dumps(line) + "\n"
            atomic_write_text(p, text)  # never a half-written history
    out = result.summary()
    out.update(file=str(p), night=duplicate or len(stream), recorded=duplicate is None, duplicate_of=duplicate,
               calibrator=fingerprint, n_items=int(sum(s.size for s in stream)))
    return out


def note_night(path: str | Path, night: int, digest: str, applied: dict[str, Any]) -> None:
    """Keep what ``apply`` found on a night beside its values in the history (``"applied"``: the set sizes,
    the PPI++ estimate or why it was withheld, the warnings), so that ``judgecp report H.jsonl`` draws the
    nights from the history alone. The line is found by its night and digest; its checked fields are kept."""
    p = Path(path)
    with history_lock(p):
        lines = p.read_text(encoding="utf-8").splitlines()
        found = False
        for i, line in enumerate(lines):
            obj = json.loads(line) if line.strip() else None
            if isinstance(obj, dict) and obj.get("night") == night and obj.get("digest") == digest:
                lines[i] = json.dumps({**obj, "applied": with_digest(applied)})  # an edit is refused
                found = True
        if found:
            atomic_write_text(p, "".join(line + "\n" for line in lines))


def read_nights(path: str | Path) -> list[dict[str, Any]]:
    """A history file's nights for a report: every line checked as ``apply`` checks it (schema, numbering,
    values and their digest, one calibrator, statistic, level, horizon and seed); the stored evidence is taken
    as it is (recomputing it needs the calibrator). An InputError names the line and the field."""
    p = Path(path)
    try:
        first = next((json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()), None)
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(f"{p}: not a judgecp history ({type(exc).__name__})") from None
    if not isinstance(first, dict) or first.get("schema") != SCHEMA:
        raise InputError(f"{p}: not a judgecp history (its first line is not a {SCHEMA} night)")
    nights = read_history(p, str(first.get("calibrator")), str(first.get("statistic")))
    for night in nights:
        applied = night.get("applied")
        if applied is not None and (not isinstance(applied, dict) or applied.get("digest") != content_digest(applied)):
            raise InputError(f"{p} line {night['night']}: its `applied` does not match its digest: the file was edited")
    return [{key: value for key, value in night.items() if key != "values"} for night in nights]
