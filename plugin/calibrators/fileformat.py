"""The ``judgecp.calibrator/1`` file format: :class:`Calibrator` and a method's fitted state as data.

Saving writes numbers only and loading never executes code (no pickle): see
:mod:`judgecp.calibrators` and docs/calibrators.md.
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

from judgecp.errors import InputError
from judgecp.report import SCALAR_TYPES, python_scalar

SCHEMA = "judgecp.calibrator/1"
#: Calibration kinds: what the estimator is (``parc`` records are calibrated as ``mcq``).
KINDS = ("likert", "mcq", "pairwise")
#: Identity fields compared at apply time.
IDENTITY_FIELDS = ("judge", "prompt", "task")
#: Quantiles of the drift statistic stored for people reading the file.
SUMMARY_QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


# -- a method's fitted state as data ----------------------------------------------------------


def _encode(value: Any, where: str) -> Any:
    """A JSON value for a fitted attribute, or an InputError when it is not plain data."""
    if isinstance(value, SCALAR_TYPES):
        scalar = python_scalar(value)
        if isinstance(scalar, float) and not math.isfinite(scalar):
            return repr(scalar)  # "inf", "-inf", "nan": JSON has no such numbers
        return scalar
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
        from judgecp.outputs import atomic_write_text
        from judgecp.report import dumps

        atomic_write_text(path, dumps(self.to_dict()) + "\n")

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
