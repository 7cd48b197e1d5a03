"""The ``judgecp.calibrator/2`` file format: :class:`Calibrator`, its content digest, and its checks on load.

Saving writes numbers only and loading never executes code (no pickle): the
estimator writes its own fitted state (``state_dict()``) and rebuilds itself
from it (``from_state(...)``), checking every field. A file whose digest does
not match its content, or whose numbers break an invariant (a threshold that
is not the quantile of the stored calibration scores, an array of the wrong
length, alpha outside (0, 1), ...), is refused with one line naming the field.
See :mod:`judgecp.workflows.calibrators` and docs/calibrators.md; the JSON Schema is
``calibrator.schema.json`` beside this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

# Re-exported: the calibrator format's canonical text and digest (judgecp.workflows.calibrators.content_digest).
from judgecp.base.digest import canonical_json as canonical_json
from judgecp.base.digest import content_digest as content_digest
from judgecp.base.errors import InputError
from judgecp.base.jsonio import dumps, to_strict
from judgecp.base.outputs import atomic_write_text
from judgecp.base.version import __version__
from judgecp.kinds import calibration_kinds, get_kind
from judgecp.stats.saved_state import RANGE_SLACK, StateReader, encode_floats
from judgecp.workflows.calibrators.statistics import IDENTITY_FIELDS, calibration_conformity

SCHEMA = "judgecp.calibrator/2"
#: Earlier schemas: read as far as to say they cannot be verified.
OLD_SCHEMAS = ("judgecp.calibrator/1",)
#: Quantiles of the drift statistic (and of the conformity scores) stored for people reading the file.
SUMMARY_QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
#: Most calibration items a calibrator may claim.
MAX_ITEMS = 10**9
#: Fields of the file that :meth:`Calibrator.from_dict` reads; any other top-level field is kept as it is.
KNOWN_FIELDS = ("schema", "digest", "judgecp_version", "kind", "method", "alpha", "scale", "options", "groups",
                "identity", "n_calibration", "source", "state", "drift", "conformity", "ppi")


def schema_path() -> Path:
    """The JSON Schema of the file format (package data)."""
    return Path(__file__).with_name("calibrator.schema.json")


def _quantiles(values: NDArray[np.float64]) -> dict[str, float]:
    return {str(q): float(np.quantile(values, q)) for q in SUMMARY_QUANTILES} if values.size else {}


# -- the calibrator --------------------------------------------------------------------------


@dataclass
class Calibrator:
    """A fitted estimator and everything needed to check that a run may use it.

    ``estimator`` is a calibrated :class:`~judgecp.kinds.likert.estimator.ScoreIntervals`,
    :class:`~judgecp.kinds.choice.estimator.ChoiceSets` or
    :class:`~judgecp.kinds.pairwise.estimator.SelectiveJudge`; :meth:`to_dict` /
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
    # : The calibration items' human target and judge proxy (:func:`judgecp.workflows.nightly.runs.proxy_and_target`),
    # for PPI++.
    ppi_labels: NDArray[np.float64] | None = None
    ppi_proxy: NDArray[np.float64] | None = None
    #: The calibration items' conformity scores (the scores that set the threshold), where the method has a
    #: label-free formula for them (:func:`conformity_scores`): name and values.
    conformity: tuple[str, NDArray[np.float64]] | None = None
    #: The digest of the file it was loaded from (checked against the content), or "" when fitted here.
    loaded_digest: str = ""

    # -- JSON -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The file's JSON object, its ``digest`` included (the state at full precision)."""

        out: dict[str, Any] = {
            "schema": SCHEMA,
            "digest": "",
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
            "state": self.estimator.state_dict(),
            "drift": {
                "statistic": self.drift_statistic,
                "n": int(self.drift_sample.size),
                "quantiles": _quantiles(np.sort(self.drift_sample)),
                "values": encode_floats(np.sort(self.drift_sample)),
            },
        }
        if self.conformity is not None:
            name, values = self.conformity
            out["conformity"] = {"score": name, "n": int(values.size), "quantiles": _quantiles(np.sort(values))}
        if self.ppi_labels is not None and self.ppi_proxy is not None:
            out["ppi"] = {
                "target": get_kind(self.kind).calibration.ppi_target,
                "labels": encode_floats(self.ppi_labels),
                "proxy": encode_floats(self.ppi_proxy),
            }
        out.update(self.extra)
        strict: dict[str, Any] = to_strict(out)
        strict["digest"] = content_digest(strict)
        return strict

    @property
    def digest(self) -> str:
        """``sha256:<hex>`` of the calibrator's content (:func:`content_digest`), as its file stores it."""
        found: str = self.loaded_digest or self.to_dict()["digest"]
        return found

    def save(self, path: str | Path) -> None:

        atomic_write_text(path, dumps(self.to_dict()) + "\n")

    @classmethod
    def from_dict(cls, obj: Any, source: str = "calibrator") -> Calibrator:
        """The calibrator a :meth:`to_dict` object describes; anything malformed, a digest that does not
        match the content, or a broken invariant is an :class:`InputError` naming the field."""
        try:
            return cls._from_dict(obj, source)
        except InputError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            raise InputError(f"{source}: malformed calibrator ({type(exc).__name__}: {exc})") from exc

    @classmethod
    def _from_dict(cls, obj: Any, source: str) -> Calibrator:

        found = obj.get("schema") if isinstance(obj, dict) else type(obj).__name__
        if found in OLD_SCHEMAS:
            raise InputError(f"{source}: a {found} file stores no calibration scores its thresholds could be checked "
                             "against, so it cannot be verified; re-run `judgecp calibrate` on the labeled records")
        if not isinstance(obj, dict) or found != SCHEMA:
            raise InputError(f"{source}: not a judgecp calibrator (schema {found!r:.60}, expected {SCHEMA!r})")
        r = StateReader(obj, f"{source}:")
        if r.text("digest") != content_digest(obj):
            r.fail("digest", "does not match the content: the file was edited or corrupted "
                   "(re-run `judgecp calibrate`)")
        kind = r.text("kind", calibration_kinds())
        method = r.text("method")
        alpha = r.number("alpha", low=0.0, high=1.0, open_interval=True)
        n = r.integer("n_calibration", low=1, high=MAX_ITEMS)
        parts = get_kind(kind).calibration.parts(r, method, alpha, n)
        ident = r.child("identity")
        identity = {name: ident.texts(name) for name in IDENTITY_FIELDS if ident.has(name)}
        ident.finish()
        drift = r.child("drift")
        drift.text("statistic", (parts.drift_statistic,))
        drift.integer("n", low=n, high=n)
        low, high = parts.drift_range
        sample = drift.floats("values", size=n, low=low - RANGE_SLACK, high=high + RANGE_SLACK, ascending=True)
        if parts.drift_values is not None and not np.array_equal(sample, parts.drift_values):
            drift.fail("values", "are not the calibration items' values the state holds")
        _check_quantiles(drift, sample)
        drift.finish()
        conformity = calibration_conformity(parts.estimator)
        if conformity is None:
            if obj.get("conformity") is not None:
                r.fail("conformity", f"the {method} method has no label-free conformity score (null)")
        else:
            conf = r.child("conformity")
            conf.text("score", (conformity[0],))
            conf.integer("n", low=conformity[1].size, high=conformity[1].size)
            _check_quantiles(conf, conformity[1])
            conf.finish()
        ppi_labels, ppi_proxy = _read_ppi(r, kind, n, parts.ppi_range) if obj.get("ppi") is not None else (None, None)
        return cls(
            kind=kind, method=method, alpha=alpha, estimator=parts.estimator, n_calibration=n, identity=identity,
            drift_sample=sample, drift_statistic=parts.drift_statistic, scale=parts.scale, options=parts.options,
            groups=parts.groups, source=r.text("source"), version=r.text("judgecp_version"),
            extra={k: v for k, v in obj.items() if k not in KNOWN_FIELDS},
            ppi_labels=ppi_labels, ppi_proxy=ppi_proxy, conformity=conformity, loaded_digest=obj["digest"],
        )

    @classmethod
    def load(cls, path: str | Path) -> Calibrator:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{p}: no such calibrator file")
        try:
            obj = json.loads(p.read_bytes().decode("utf-8-sig"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise InputError(f"{p}: not a JSON calibrator ({type(exc).__name__}: {str(exc)[:80]})") from exc
        except OSError as exc:
            raise InputError(f"{p}: cannot read the calibrator ({exc.strerror or exc})") from exc
        return cls.from_dict(obj, source=str(p))


def _check_quantiles(r: StateReader, values: NDArray[np.float64]) -> None:
    """The stored quantiles (for people) are the ones the stored values give."""
    want = _quantiles(np.sort(values))
    if r.get("quantiles") != want:
        r.fail("quantiles", "are not the quantiles of the stored values")


def _read_ppi(r: StateReader, kind: str, n: int, bounds: tuple[float, float]) -> tuple[NDArray[np.float64], ...]:

    ppi = r.child("ppi")
    ppi.text("target", (get_kind(kind).calibration.ppi_target,))
    low, high = bounds[0] - RANGE_SLACK, bounds[1] + RANGE_SLACK
    labels = ppi.floats("labels", size=n, low=low, high=high)
    proxy = ppi.floats("proxy", size=n, low=low, high=high)
    ppi.finish()
    return labels, proxy
