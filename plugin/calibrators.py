"""Calibrate once, apply to every run: fitted estimators saved as data (``judgecp.calibrator/1``).

A *calibrator* is one of the public estimators of :mod:`judgecp.estimators`
(:class:`~judgecp.estimators.ScoreIntervals` for Likert judges,
:class:`~judgecp.estimators.ChoiceSets` for multiple choice,
:class:`~judgecp.estimators.SelectiveJudge` for pairwise verdicts), fitted on
labeled records and written as JSON: the conformal thresholds (or the SCOPE
threshold) as numbers, the method spec that rebuilds the estimator around
them, the scale or options, the judge/prompt/task identity of the
calibration records, the calibration size, and a sample of a label-free judge
statistic for drift checks. Loading it never executes code (no pickle):
methods whose fitted state is a model object (``probabilities=recalibrated``,
the quantile-regression methods, ...) are refused at :func:`calibrate` time
with an error that names the methods that can be saved.

:func:`apply` puts the calibrator on new records, labeled or not: per item
the label set (and interval), option set, or accept/abstain, and a summary
(mean set size, singletons, abstention rate, coverage where the run has
labels, the drift test). Records of another kind, scale, judge or prompt are
refused unless ``force=True``.

Drift: under exchangeability of the calibration items and the run's items,
the run's label-free judge statistic (Likert: the expected score
``sum_k k p_k``; multiple choice: the top option probability; pairwise: the
uncertainty signal the threshold applies to, BPE by default) has the same
distribution as the calibrator's stored sample, so the two-sample
Kolmogorov-Smirnov p-value is valid (its size is at most the level) and a
small p-value says the guarantees of the calibrator may no longer hold; a
conformal test martingale (:mod:`judgecp.drift`) checks the same in the run's
order, valid at whatever point of a stream it alarms. With
labels in the run, the summary also tests the observed coverage against
``1 - alpha`` (one-sided binomial test).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.data import ChoiceData, PairData, ScoreData
from judgecp.errors import InputError

SCHEMA = "judgecp.calibrator/1"
#: Calibration kinds: what the estimator is (``parc`` records are calibrated as ``mcq``).
KINDS = ("likert", "mcq", "pairwise")
#: Identity fields compared at apply time.
IDENTITY_FIELDS = ("judge", "prompt", "task")
#: Quantiles of the drift statistic stored for people reading the file.
SUMMARY_QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
#: Default level of the drift test.
DRIFT_LEVEL = 0.01


# -- a method's fitted state as data ----------------------------------------------------------


def _encode(value: Any, where: str) -> Any:
    """A JSON value for a fitted attribute, or an InputError when it is not plain data."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else repr(v)  # "inf", "-inf", "nan": JSON has no such numbers
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"array": [_encode(v, where) for v in value.ravel().tolist()], "shape": list(value.shape),
                "dtype": value.dtype.str}
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, str, bool)) for v in value):
        return [_encode(v, where) for v in value]
    raise InputError(
        f"{where} is a fitted {type(value).__name__}, which a calibrator does not hold as data; "
        "calibrate a method whose state is numbers (naive, lac, aps, raps, margin, ordinal_aps, ordinal_set, lvd) "
        "with the judge's own probabilities"
    )


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, dict) and "array" in value:
        try:
            dtype = np.dtype(str(value["dtype"]))
            if dtype.kind not in "biuf":
                raise TypeError(f"dtype {dtype} is not numeric")
            flat = [float(v) if isinstance(v, str) else v for v in value["array"]]
            return np.asarray(flat, dtype=dtype).reshape(value["shape"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"calibrator: a stored array cannot be read ({exc})") from exc
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


#: Names of fitted attributes (``quantile_``, ``_predict_seed_``); never a dunder such as ``__dict__``.
_FITTED_NAME = re.compile(r"^_?[A-Za-z][A-Za-z0-9_]*_$")
#: Bookkeeping attributes of :class:`judgecp.conformal.ConformalMethod` that are rebuilt, not stored.
_SKIP = {"_rng_"}


def method_state(method: Any, where: str) -> dict[str, Any]:
    """The fitted attributes (names ending in ``_``) of a conformal method, as JSON values."""
    state: dict[str, Any] = {}
    for name, value in sorted(vars(method).items()):
        if not name.endswith("_") or name in _SKIP:
            continue
        state[name] = _encode(value, f"{where}: {name}")
    return state


def restore_method(spec: str, state: dict[str, Any], *, alpha: float, scale: Any) -> Any:
    """Rebuild a conformalized method from its spec and stored state (no code is executed)."""
    from judgecp.plugins import build_method

    method = build_method(spec, alpha=alpha, scale=scale)
    for name, value in state.items():
        if not _FITTED_NAME.match(name):
            raise InputError(f"calibrator: {name!r} is not a fitted attribute")
        setattr(method, name, _decode(value))
    if not getattr(method, "conformalized_", False):
        raise InputError(f"calibrator: the stored {spec} method was never conformalized")
    return method


# -- the calibrator --------------------------------------------------------------------------


@dataclass
class Calibrator:
    """A fitted estimator and everything needed to check that a run may use it.

    ``estimator`` is a calibrated :class:`~judgecp.estimators.ScoreIntervals`,
    :class:`~judgecp.estimators.ChoiceSets` or
    :class:`~judgecp.estimators.SelectiveJudge`; :meth:`to_dict` /
    :meth:`from_dict` are the JSON form (docs/calibrators.md).
    """

    kind: str
    method: str
    alpha: float
    estimator: Any
    n_calibration: int
    identity: dict[str, list[str]]
    drift_sample: NDArray[np.float64]
    drift_statistic: str
    scale: tuple[int, int] | None = None
    options: list[str] | None = None
    groups: str | None = None
    source: str = ""
    version: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: The calibration items' human target and judge proxy (:func:`judgecp.ppi.proxy_and_target`), for PPI++.
    ppi_labels: NDArray[np.float64] | None = None
    ppi_proxy: NDArray[np.float64] | None = None
    #: The calibration items' conformity scores (the scores that set the threshold), where the method has a
    #: label-free formula for them (:func:`conformity_scores`): name and values.
    conformity: tuple[str, NDArray[np.float64]] | None = None

    # -- JSON -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        from judgecp import __version__

        out: dict[str, Any] = {
            "schema": SCHEMA,
            "judgecp_version": self.version or __version__,
            "kind": self.kind,
            "method": self.method,
            "alpha": self.alpha,
            "scale": list(self.scale) if self.scale else None,
            "options": self.options,
            "groups": self.groups,
            "identity": self.identity,
            "n_calibration": self.n_calibration,
            "source": self.source,
            "state": self._state(),
            "drift": {
                "statistic": self.drift_statistic,
                "n": int(self.drift_sample.size),
                "quantiles": {str(q): float(np.quantile(self.drift_sample, q)) for q in SUMMARY_QUANTILES}
                if self.drift_sample.size else {},
                "values": [round(float(v), 9) for v in np.sort(self.drift_sample)],
            },
        }
        if self.conformity is not None:
            name, values = self.conformity
            out["conformity"] = {"score": name, "n": int(values.size),
                                 "quantiles": {str(q): float(np.quantile(values, q)) for q in SUMMARY_QUANTILES},
                                 "values": [round(float(v), 12) for v in np.sort(values)]}
        if self.ppi_labels is not None and self.ppi_proxy is not None:
            from judgecp.ppi import TARGETS

            out["ppi"] = {"target": TARGETS[self.kind], "labels": [float(v) for v in self.ppi_labels],
                          "proxy": [round(float(v), 12) for v in self.ppi_proxy]}
        out.update(self.extra)
        return out

    def _state(self) -> dict[str, Any]:
        est = self.estimator
        if self.kind == "pairwise":
            return {"threshold": _encode(est.threshold_, "threshold"), "signal": est.signal, "delta": est.delta,
                    "controller": est.controller}
        if self.kind == "mcq":
            return {"width": int(est.width_), "method": method_state(est.method_, self.method)}
        if est.mondrian_ is not None:
            mondrian = est.mondrian_
            return {"mondrian": {
                "groups": {g: method_state(m, f"{self.method} (group {g})") for g, m in mondrian.methods_.items()},
                "n_calibration": dict(mondrian.n_calibration_),
                "insufficient_groups": list(mondrian.insufficient_groups_),
            }}
        return {"method": method_state(est.method_, self.method)}

    def save(self, path: str | Path) -> None:
        from judgecp.report import dumps

        Path(path).write_text(dumps(self.to_dict()) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, obj: dict[str, Any], source: str = "calibrator") -> Calibrator:
        """The calibrator a :meth:`to_dict` object describes; anything malformed is an :class:`InputError`."""
        try:
            return cls._from_dict(obj, source)
        except InputError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise InputError(f"{source}: malformed calibrator ({type(exc).__name__}: {exc})") from exc

    @classmethod
    def _from_dict(cls, obj: dict[str, Any], source: str) -> Calibrator:
        from judgecp.estimators import ChoiceSets, ScoreIntervals, SelectiveJudge
        from judgecp.scale import LikertScale

        if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
            found = obj.get("schema") if isinstance(obj, dict) else type(obj).__name__
            raise InputError(f"{source}: not a judgecp calibrator (schema {found!r}, expected {SCHEMA!r})")
        try:
            kind, method, alpha, state = obj["kind"], obj["method"], float(obj["alpha"]), obj["state"]
            drift = obj["drift"]
            sample = np.asarray(drift["values"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{source}: incomplete calibrator ({exc})") from exc
        if kind not in KINDS:
            raise InputError(f"{source}: unknown calibrator kind {kind!r}")
        confidence = 1.0 - alpha
        scale = tuple(obj["scale"]) if obj.get("scale") else None
        est: Any
        if kind == "pairwise":
            est = SelectiveJudge(state["controller"], risk_level=alpha, signal=state["signal"], delta=state["delta"])
            est.threshold_ = float(_decode(state["threshold"]))
            est.n_calibration_ = int(obj["n_calibration"])
        elif kind == "mcq":
            est = ChoiceSets(method, confidence_level=confidence)
            est.width_ = int(state["width"])
            est.method_ = restore_method(method, state["method"], alpha=alpha, scale=LikertScale(1, est.width_))
        else:
            likert = LikertScale(*scale) if scale else LikertScale()
            est = ScoreIntervals(method, confidence_level=confidence, scale=likert)
            if "mondrian" in state:
                from judgecp.methods.mondrian import Mondrian
                from judgecp.plugins import build_method

                def make(i: int) -> Any:
                    return build_method(method, alpha=alpha, scale=likert)

                mondrian = Mondrian(make)
                mondrian.methods_ = {g: restore_method(method, s, alpha=alpha, scale=likert)
                                     for g, s in state["mondrian"]["groups"].items()}
                mondrian.n_calibration_ = dict(state["mondrian"]["n_calibration"])
                mondrian.insufficient_groups_ = list(state["mondrian"]["insufficient_groups"])
                mondrian.output_ = make(0).output
                est.mondrian_ = mondrian
                est.method_ = make(0)
            else:
                est.method_ = restore_method(method, state["method"], alpha=alpha, scale=likert)
                est.mondrian_ = None
        known = {"schema", "judgecp_version", "kind", "method", "alpha", "scale", "options", "groups", "identity",
                 "n_calibration", "source", "state", "drift", "ppi", "conformity"}
        conf = obj.get("conformity")
        conformity = (str(conf["score"]), np.asarray(conf["values"], dtype=np.float64)) if conf else None
        ppi = obj.get("ppi") or {}
        ppi_labels = np.asarray(ppi["labels"], dtype=np.float64) if "labels" in ppi else None
        ppi_proxy = np.asarray(ppi["proxy"], dtype=np.float64) if "proxy" in ppi else None
        if ppi_labels is not None and (ppi_proxy is None or ppi_proxy.shape != ppi_labels.shape):
            raise InputError(f"{source}: ppi.labels and ppi.proxy differ in length")
        return cls(
            kind=kind, method=method, alpha=alpha, estimator=est, n_calibration=int(obj["n_calibration"]),
            identity={k: list(v) for k, v in (obj.get("identity") or {}).items()}, drift_sample=sample,
            drift_statistic=str(drift.get("statistic", "")), scale=scale,
            options=obj.get("options"), groups=obj.get("groups"), source=str(obj.get("source", "")),
            version=str(obj.get("judgecp_version", "")), extra={k: v for k, v in obj.items() if k not in known},
            ppi_labels=ppi_labels, ppi_proxy=ppi_proxy, conformity=conformity,
        )

    @classmethod
    def load(cls, path: str | Path) -> Calibrator:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{p}: no such calibrator file")
        try:
            obj = json.loads(p.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: not a JSON calibrator ({exc})") from exc
        return cls.from_dict(obj, source=str(p))


# -- label-free statistics --------------------------------------------------------------------


def drift_statistic(data: Any, signal: str = "bpe") -> tuple[str, NDArray[np.float64]]:
    """The label-free judge statistic of each item the drift test compares (name, values)."""
    if isinstance(data, ScoreData):
        from judgecp.features import expected_score, judge_probabilities

        return "expected_score", expected_score(judge_probabilities(data.logprobs, data.scale), data.scale)
    if isinstance(data, ChoiceData):
        return "top_option_probability", _choice_probabilities(data).max(axis=1)
    if isinstance(data, PairData):
        from judgecp.signals import signals

        return f"uncertainty:{signal}", np.asarray(signals(data)[signal].uncertainty, dtype=np.float64)
    raise InputError(f"no drift statistic for {type(data).__name__}")


def _choice_probabilities(data: ChoiceData) -> NDArray[np.float64]:
    lp = np.where(data.valid, data.logprobs, -np.inf)
    lp = lp - lp.max(axis=1, keepdims=True)
    p = np.exp(lp)
    out: NDArray[np.float64] = p / p.sum(axis=1, keepdims=True)
    return out


def _identity(data: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in IDENTITY_FIELDS:
        if name in data.fields:
            values = sorted({str(v) for v in data.fields[name] if str(v) not in ("", "None", "nan")})
            if values:
                out[name] = values
    return out


def _calibration_kind(data: Any, kind: str | None) -> str:
    own = {"likert": "likert", "pairwise": "pairwise", "mcq": "mcq", "parc": "mcq"}[data.kind]
    if kind is not None and kind not in KINDS and kind != "parc":
        raise InputError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    if kind is not None and {"parc": "mcq"}.get(kind, kind) != own:
        raise InputError(f"--kind {kind}: the records are {data.kind} records")
    return own


def conformity_scores(method: Any, X: Any, y: Any) -> tuple[str, NDArray[np.float64]] | None:
    """The conformity scores of labeled rows under a calibrated method, where it has a label-free formula.

    ``naive`` (expected score): ``|y - sum_k k p_k|``; ``lac``: ``1 - p_y``;
    ``margin``: ``max_{j != y} p_j - p_y`` (the judge's own probabilities).
    Other methods (randomised scores, fitted models): ``None``.
    """
    from judgecp.methods.sets import LAC, Margin, lac_scores, margin_scores, true_label_scores
    from judgecp.methods.split import NaiveSplit

    Xa, ya = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if isinstance(method, NaiveSplit) and method.predictor == "expected":
        return "abs_residual", np.abs(ya - method.point(Xa))
    if isinstance(method, (LAC, Margin)) and method.probabilities == "judge":
        P = method._proba(Xa)
        scores = lac_scores(P) if isinstance(method, LAC) else margin_scores(P)
        return method.name, true_label_scores(scores, method.scale.index(ya))
    return None


# -- calibrate ---------------------------------------------------------------------------------


def calibrate(
    data: Any,
    *,
    kind: str | None = None,
    method: str | None = None,
    alpha: float = 0.1,
    groups: str | None = None,
    random_state: int | None = 0,
    delta: float = 0.1,
    signal: str = "bpe",
) -> Calibrator:
    """Fit a calibrator on labeled data (:func:`judgecp.load` output, or a path).

    Parameters
    ----------
    data : ScoreData, ChoiceData, PairData, str or Path
        Labeled judge outputs; unlabeled rows are an error.
    kind : str, optional
        ``likert``, ``mcq`` or ``pairwise``; checked against the data.
    method : str, optional
        Likert: a conformal method spec (default ``naive``); multiple choice:
        a set method (default ``lac``); pairwise: a risk controller
        (default ``scope``).
    alpha : float
        Miscoverage (Likert, multiple choice) or the risk level (pairwise).
    groups : str, optional
        Likert: a field for Mondrian (per-group) calibration.

    Examples
    --------
    >>> from judgecp import simulate_likert_judge
    >>> cal = calibrate(simulate_likert_judge(n=300, seed=1), method="naive", alpha=0.1)
    >>> cal.kind, cal.n_calibration
    ('likert', 300)
    """
    from judgecp.conformal import check_alpha
    from judgecp.estimators import ChoiceSets, ScoreIntervals, SelectiveJudge
    from judgecp.plugins import check_method_spec

    if isinstance(data, (str, Path)):
        from judgecp.data import load

        data = load(data, kind if kind != "mcq" else None)
    alpha = check_alpha(alpha)
    ckind = _calibration_kind(data, kind)
    if data.n == 0 or not data.labeled.all():
        raise InputError(f"calibrate needs labeled records; {int((~data.labeled).sum())} of {data.n} are unlabeled")
    scale: tuple[int, int] | None = None
    options: list[str] | None = None
    name, sample = drift_statistic(data, signal)
    if ckind == "likert":
        spec = check_method_spec(method or "naive")
        est: Any = ScoreIntervals(spec, confidence_level=1.0 - alpha, random_state=random_state)
        est.calibrate(data, groups=groups)
        scale = (data.scale.minimum, data.scale.maximum)
    elif ckind == "mcq":
        if groups:
            raise InputError("groups (Mondrian) are for Likert calibrators")
        spec = check_method_spec(method or "lac", kind="mcq", flag="--method")
        est = ChoiceSets(spec, confidence_level=1.0 - alpha, random_state=random_state).calibrate(data)
        options = sorted({o for opts in data.options for o in opts})
    else:
        if groups:
            raise InputError("groups (Mondrian) are for Likert calibrators")
        spec = method or "scope"
        est = SelectiveJudge(spec, risk_level=alpha, signal=signal, delta=delta).calibrate(data)
    from judgecp.ppi import proxy_and_target

    proxy, target, _ = proxy_and_target(data)
    cal = Calibrator(kind=ckind, method=spec, alpha=alpha, estimator=est, n_calibration=int(data.n),
                     identity=_identity(data), drift_sample=np.asarray(sample, dtype=np.float64),
                     drift_statistic=name, scale=scale, options=options, groups=groups, source=str(data.source),
                     ppi_labels=target, ppi_proxy=proxy,
                     conformity=conformity_scores(est.method_, data.X, data.labels)
                     if ckind == "likert" and est.mondrian_ is None else None)
    cal.to_dict()  # refuse now, not at save time, a fitted state that is not plain data
    return cal


# -- apply -------------------------------------------------------------------------------------


@dataclass
class Applied:
    """What :func:`apply` found: per-item outputs (in the data's row order) and the summary."""

    data: Any
    sets: list[list[Any]] | None
    lower: NDArray[np.float64] | None
    upper: NDArray[np.float64] | None
    accept: NDArray[np.bool_] | None
    summary: dict[str, Any]

    def records(self) -> list[dict[str, Any]]:
        """The applied items as ``judgecp.record/1`` records with ``set`` (and ``interval``) or ``accept``."""
        from judgecp.data.export import to_records

        out: list[dict[str, Any]] = to_records(self.data)
        if self.accept is not None:
            by_pair = dict(zip(self.data.pair_ids.tolist(), self.accept.tolist(), strict=True))
            for rec in out:
                rec["accept"] = bool(by_pair[rec["pair_id"]])
            return out
        assert self.sets is not None
        for i, rec in enumerate(out):
            rec["set"] = self.sets[i]
            if self.lower is not None and self.upper is not None and math.isfinite(self.lower[i]):
                rec["interval"] = [float(self.lower[i]), float(self.upper[i])]
        return out


def annotate(raw: list[dict[str, Any]], applied: Applied) -> list[dict[str, Any]]:
    """Every input record (as read, in input order) with the calibrator's output added.

    A record judgecp used gets ``set`` (and ``interval``) or ``accept``; one it
    could not use (excluded, counted in the summary) gets ``set`` / ``accept``
    null and ``"applied": false``. Records are matched by ``id`` (pairs by
    ``pair_id`` and ``order``); a repeated id is applied once, at its first record.
    """
    pairs = applied.accept is not None
    out_key = "accept" if pairs else "set"
    done: dict[Any, dict[str, Any]] = {}
    for rec in applied.records():
        key = (str(rec.get("pair_id")), str(rec.get("order"))) if pairs else str(rec.get("id"))
        done[key] = {k: rec[k] for k in ("set", "interval", "accept") if k in rec}
    out: list[dict[str, Any]] = []
    for rec in raw:
        key = (str(rec.get("pair_id")), str(rec.get("order"))) if pairs else str(rec.get("id"))
        added = done.pop(key, None)
        out.append({**rec, **added} if added is not None else {**rec, out_key: None, "applied": False})
    return out


def check_compatible(cal: Calibrator, data: Any, *, force: bool = False) -> list[str]:
    """Problems that make ``cal`` unfit for ``data``: an InputError, or warnings when ``force``."""
    problems: list[str] = []
    ckind = {"likert": "likert", "pairwise": "pairwise", "mcq": "mcq", "parc": "mcq"}[data.kind]
    if ckind != cal.kind:
        raise InputError(f"the calibrator is for {cal.kind} judges, the records are {data.kind} records "
                         "(no --force: the state cannot apply to another kind)")
    if cal.kind == "likert" and cal.scale and (data.scale.minimum, data.scale.maximum) != tuple(cal.scale):
        problems.append(f"scale {data.scale.minimum}:{data.scale.maximum} differs from the calibrator's "
                        f"{cal.scale[0]}:{cal.scale[1]}")
    if cal.kind == "mcq":
        width = int(cal.estimator.width_)
        if data.k > width:
            raise InputError(f"items with {data.k} options; the calibrator saw at most {width}")
        letters = sorted({o for opts in data.options for o in opts} - set(cal.options or []))
        if letters:
            problems.append(f"options {letters} never seen in calibration (options {cal.options})")
    run_identity = _identity(data)
    for name in IDENTITY_FIELDS:
        want, got = cal.identity.get(name), run_identity.get(name)
        if want and got and set(got) - set(want):
            problems.append(f"{name} {sorted(set(got) - set(want))} differs from the calibrator's {want}")
    if problems and not force:
        raise InputError("the calibrator does not fit these records: " + "; ".join(problems) + " (--force to apply anyway)")
    return problems


def drift_test(cal: Calibrator, data: Any, level: float = DRIFT_LEVEL) -> dict[str, Any]:
    """Two-sample Kolmogorov-Smirnov test of the run's drift statistic against the calibrator's sample."""
    from scipy.stats import ks_2samp

    signal = cal.estimator.signal if cal.kind == "pairwise" else "bpe"
    name, values = drift_statistic(data, signal)
    values = values[np.isfinite(values)]
    out: dict[str, Any] = {"test": "ks_2samp", "statistic_of": name, "level": level,
                           "n_calibration": int(cal.drift_sample.size), "n_run": int(values.size)}
    if values.size == 0 or cal.drift_sample.size == 0:
        out.update(statistic=None, p_value=None, drift=None)
        return out
    from judgecp.drift import martingale_test

    res = ks_2samp(cal.drift_sample, values)
    out.update(statistic=float(res.statistic), p_value=float(res.pvalue), drift=bool(res.pvalue < level),
               calibration_median=float(np.median(cal.drift_sample)), run_median=float(np.median(values)),
               martingale=martingale_test(cal.drift_sample, values, level=level))
    if cal.conformity is not None and cal.kind == "likert" and data.labeled.sum() >= 2:
        rows = np.flatnonzero(data.labeled)
        found = conformity_scores(cal.estimator.method_, data.X[rows], data.labels[rows])
        if found is not None and found[0] == cal.conformity[0]:
            conf = ks_2samp(cal.conformity[1], found[1])
            out["conformity"] = {"score": found[0], "n_run": int(rows.size), "statistic": float(conf.statistic),
                                 "p_value": float(conf.pvalue), "drift": bool(conf.pvalue < level)}
    return out


def apply(cal: Calibrator, data: Any, *, force: bool = False, groups: str | None = None,
          drift_level: float = DRIFT_LEVEL) -> Applied:
    """Per-item sets / intervals / accept-abstain on ``data`` and the summary (see the module docstring)."""
    from scipy.stats import binom

    warnings = [{"kind": "compatibility", "message": m + " (forced)"} for m in check_compatible(cal, data, force=force)]
    summary: dict[str, Any] = {
        "kind": cal.kind, "method": cal.method, "alpha": cal.alpha, "n": int(data.n_read or data.n),
        "n_applied": int(data.n), "excluded": data.excluded.to_json(), "n_calibration": cal.n_calibration,
    }
    labeled = data.labeled
    sets = lower = upper = accept = None
    if cal.kind == "pairwise":
        pred = cal.estimator.predict(data)
        accept = pred.accept
        summary.update(threshold=float(cal.estimator.threshold_), accepted=int(accept.sum()),
                       abstention_rate=float(1.0 - accept.mean()) if data.n else None)
        if labeled.any():
            acc = accept & labeled
            err = pred.prediction[acc] != data.labels[acc]
            summary["labeled"] = {"n": int(labeled.sum()), "accepted": int(acc.sum()),
                                  "error_among_accepted": float(err.mean()) if acc.any() else None,
                                  "risk_level": cal.alpha}
    else:
        if cal.kind == "likert":
            by = groups or cal.groups
            prediction = cal.estimator.predict(data, groups=by) if cal.estimator.mondrian_ is not None else \
                cal.estimator.predict(data)
            sets = prediction.label_sets()
            size = prediction.sets.sum(axis=1)
            if prediction.has_interval:
                lower, upper = prediction.lower, prediction.upper
                summary["mean_interval_width"] = float(np.mean(upper - lower)) if data.n else None
            summary["full_range"] = int(prediction.full_range.sum())
            covered = np.zeros(data.n, bool)
            covered[labeled] = prediction.take(np.flatnonzero(labeled)).covers(data.labels[labeled])
        else:
            choice = cal.estimator.predict(data)
            sets = choice.option_sets()
            size = choice.size
            covered = (choice.sets & data.correct[:, : choice.sets.shape[1]]).any(axis=1)
        summary.update(mean_set_size=float(size.mean()) if data.n else None,
                       singleton_share=float((size == 1).mean()) if data.n else None,
                       empty_sets=int((size == 0).sum()))
        if labeled.any():
            k, n = int(covered[labeled].sum()), int(labeled.sum())
            # One-sided: P(K <= k) for K ~ Bin(n, 1 - alpha); small when coverage fell below the promise.
            summary["labeled"] = {"n": n, "coverage": k / n, "target": 1.0 - cal.alpha,
                                  "p_value_below_target": float(binom.cdf(k, n, 1.0 - cal.alpha))}
    drift = drift_test(cal, data, drift_level)
    summary["drift"] = drift
    if drift.get("drift"):
        warnings.append({"kind": "drift", "message": (
            f"the run's {drift['statistic_of']} differs from the calibration data (KS p = {drift['p_value']:.2g} "
            f"< {drift_level}); the calibrator's guarantees assume exchangeable items")})
    if (drift.get("conformity") or {}).get("drift"):
        warnings.append({"kind": "conformity_drift", "message": (
            f"the conformity scores ({drift['conformity']['score']}) of the run's labeled items differ from the "
            f"calibration items' (KS p = {drift['conformity']['p_value']:.2g} < {drift_level})")})
    martingale = drift.get("martingale") or {}
    if martingale.get("alarm"):
        warnings.append({"kind": "drift_sequential", "message": (
            f"the conformal test martingale of the run's {drift['statistic_of']} reached {martingale['max']:.3g} "
            f">= 1/{drift_level:g} (first at record {martingale['first_alarm']}): the run is not exchangeable "
            "with the calibration data")})
    lab = summary.get("labeled", {})
    if lab.get("p_value_below_target") is not None and lab["p_value_below_target"] < drift_level:
        warnings.append({"kind": "coverage", "message": (
            f"coverage on the run's labeled items is {lab['coverage']:.3f}, below {1 - cal.alpha:.2f} "
            f"(binomial p = {lab['p_value_below_target']:.2g})")})
    summary["estimate"] = calibrated_estimate(cal, data)
    summary["warnings"] = warnings
    return Applied(data, sets, lower, upper, accept, summary)


def calibrated_estimate(cal: Calibrator, data: Any, alpha: float | None = None) -> dict[str, Any] | None:
    """PPI++ with the calibrator's labeled items (and the run's labeled rows) as the labeled sample.

    The run's unlabeled rows are the unlabeled sample. Valid when the run's
    items are exchangeable with the calibration items (the drift test checks
    the judge's side of that); for a new model under evaluation, label a few
    hundred of its own items and use :func:`judgecp.ppi.estimate` instead.
    ``None`` when the calibrator has no PPI pairs or the run no unlabeled row.
    """
    from judgecp.ppi import ppi_mean, proxy_and_target

    if cal.ppi_labels is None or cal.ppi_proxy is None:
        return None
    proxy, target, name = proxy_and_target(data)
    unlabeled = np.isnan(target)
    if not unlabeled.any():
        return None
    y = np.concatenate([cal.ppi_labels, target[~unlabeled]])
    f = np.concatenate([cal.ppi_proxy, proxy[~unlabeled]])
    out: dict[str, Any] = ppi_mean(y, f, proxy[unlabeled], alpha=cal.alpha if alpha is None else alpha)
    out.update(target=name, labeled_from="calibrator" if unlabeled.all() else "calibrator+run",
               n_labeled_calibrator=int(cal.ppi_labels.size))
    return out
