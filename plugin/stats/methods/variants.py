"""Variants of every method: label-conditional thresholds, cross-conformal (CV+) fits, extra features.

Any registered method spec takes three more options (``judgecp methods``
lists them); :func:`make_variant` wraps the method in a :class:`Variant`:

``conditional=label``
    Class-conditional (Mondrian by label, Vovk 2003; Sadinle, Lei &
    Wasserman 2019, sec. 4.3) conformal: a candidate label ``k`` joins the set
    of ``x`` when its score ``s(x, k)`` passes the quantile of the
    calibration scores *of points labelled k*. Guarantee, for exchangeable
    data: ``P(Y in C(X) | Y = k) >= 1 - alpha`` for every label ``k`` with at
    least :func:`~judgecp.stats.conformal.min_calibration_size` calibration points
    (9 at alpha 0.1). Labels with fewer points are pooled into one cell whose
    threshold uses all of their points: among test points whose label is in
    the pool, coverage is >= 1 - alpha (marginal over the pooled labels);
    when even the pool is too small, its labels join every set (coverage 1).
    ``pooled_labels_`` names them.

``cv=K`` (methods that fit a model)
    CV+ (Barber, Candès, Ramdas & Tibshirani 2021; Romano, Sesia & Candès 2020
    for label sets): K models, each fitted on all calibration points outside
    one fold; every calibration point is scored by the model that did not see
    it, so *all* calibration points set the threshold and all (K-1)/K of them
    fit each model (split mode fits on ``fit_fraction`` and calibrates on the
    rest). Label ``k`` joins the set of ``x`` unless
    ``#{i : s_{-f(i)}(x, k) > R_i} >= (1 - alpha)(n + 1)``, with
    ``R_i = s_{-f(i)}(X_i, Y_i)``. Guarantee: coverage
    ``>= 1 - 2 alpha - min(2(1 - 1/K)/(n/K + 1), (1 - K/n)/(K + 1))``
    (Barber et al. 2021, Thm. 4); in practice close to ``1 - alpha``.
    ``cv=n`` is the jackknife+ (``>= 1 - 2 alpha``). With
    ``conditional=label`` the same count runs within each label's cell.

``features=entropy+margin`` (methods that fit a model)
    Extra model inputs computed from the judge's distribution, joined by
    ``+``: ``entropy`` (nats), ``margin`` (top-1 minus top-2 probability),
    ``mode`` (the argmax label, the judge's own score when it answers its mode).
    They are appended to ``X`` before the method sees it (every fitted model
    reads extra columns of ``X``: :func:`judgecp.stats.features.model_features`),
    so the guarantee is the method's own. Row fields such as the task or the
    parsed score reach the models as extra columns of the data
    (:func:`judgecp.data.row_features.with_row_features`, or ``--features`` on a table).

The conditional and CV+ variants predict label sets only (no continuous
interval: a label-conditional or CV+ set need not be an interval); they work
on the candidate-label scores of each method
(:func:`judgecp.stats.methods.label_scores.label_scores`), which
reproduce each method's own split-conformal sets (tested; R2CCP's label set
is the labels whose nearest grid point passes, a subset of its hull's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.base.scale import LikertScale
from judgecp.stats.conformal import (
    ConformalMethod,
    FloatArray,
    MethodOptions,
    Prediction,
    conformal_rank,
)
from judgecp.stats.features import judge_probabilities
from judgecp.stats.methods.label_scores import LabelScores, label_scores
from judgecp.stats.methods.spec import parse_method_spec

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: The options a method spec may carry beyond the method's own parameters.
VARIANT_OPTIONS = ("conditional", "cv", "features")
CONDITIONAL = ("label", "group")
DERIVED_FEATURES = ("entropy", "margin", "mode")
#: Absolute slack when a test score is compared with a calibration score (as
#: :data:`judgecp.stats.methods.sets.SCORE_TOLERANCE`): a label whose score equals
#: the threshold in exact arithmetic is never dropped; it can only enlarge sets.
TOLERANCE = 1e-10

# -- derived features ---------------------------------------------------------------------------


def derived_features(X: FloatArray, scale: LikertScale, names: tuple[str, ...]) -> FloatArray:
    """The named features of the judge's distribution (first ``scale.k`` columns of X), ``(n, len(names))``."""
    P = judge_probabilities(X, scale)
    cols = []
    for name in names:
        if name == "entropy":
            cols.append(-(P * np.log(np.clip(P, 1e-300, None))).sum(axis=1))
        elif name == "margin":
            top2 = -np.partition(-P, 1, axis=1)[:, :2]
            cols.append(top2[:, 0] - top2[:, 1])
        else:  # mode
            cols.append(np.argmax(P, axis=1).astype(np.float64) + scale.minimum)
    return np.column_stack(cols) if cols else np.zeros((X.shape[0], 0))


def parse_features(value: Any) -> tuple[str, ...]:
    names = tuple(v.strip() for v in str(value).replace(",", "+").split("+") if v.strip())
    bad = [n for n in names if n not in DERIVED_FEATURES]
    if bad or not names:
        raise InputError(f"features: unknown {bad or value!r}; choose from {'+'.join(DERIVED_FEATURES)}")
    return names


# -- the variant ----------------------------------------------------------------------------------


class Variant(ConformalMethod):
    """A method with ``conditional=``, ``cv=`` and/or ``features=`` (module docstring).

    ``make_base(random_state)`` returns a fresh, unfitted copy of the method.
    With only ``features`` the variant is the method itself on augmented
    inputs (same outputs: interval and label set).
    """

    name = "variant"
    output = "set"

    def __init__(
        self,
        alpha: float = 0.1,
        *,
        make_base: Callable[[int | None], ConformalMethod],
        conditional: str | None = None,
        cv: int | None = None,
        features: str | None = None,
        **options: Unpack[MethodOptions],
    ) -> None:
        super().__init__(alpha, **options)
        self.make_base = make_base
        self.conditional = conditional
        self.cv = cv
        self.features = features
        probe = make_base(None)
        self.name = probe.name  # type: ignore[misc]
        self.fits_model = probe.fits_model
        if conditional is not None and conditional not in CONDITIONAL:
            raise InputError(f"{probe.name}: conditional must be one of {CONDITIONAL}, got {conditional!r}")
        if cv is not None:
            if isinstance(cv, bool) or not isinstance(cv, int) or cv < 2:
                raise InputError(f"{probe.name}: cv must be an integer >= 2 (folds), got {cv!r}")
            if not probe.fits_model:
                raise InputError(f"{probe.name}: cv= needs a method that fits a model; this one fits none")
        self.feature_names_ = parse_features(features) if features is not None else ()
        if self.feature_names_ and not probe.fits_model:
            raise InputError(f"{probe.name}: features= needs a method that fits a model; this one fits none")
        self.scores_only = conditional is not None or cv is not None
        self.output = "set" if self.scores_only else probe.output  # type: ignore[misc,assignment]

    # -- inputs ------------------------------------------------------------------
    def _augment(self, X: FloatArray) -> FloatArray:
        if not self.feature_names_:
            return X
        return np.hstack([X, derived_features(X, self.scale, self.feature_names_)])

    def _base_seed(self, i: int) -> int:
        root = self.random_state if isinstance(self.random_state, int) else 0
        return int(np.random.SeedSequence([root, 7919, i]).generate_state(1)[0])

    def _rank_alpha(self) -> float:
        if self.scores_only:
            return float(self.alpha) * min(self._shares())
        models = getattr(self, "models_", None)
        return models[0]._rank_alpha() if models else float(self.alpha)

    def _shares(self) -> list[float]:
        return getattr(self, "shares_", [1.0])

    # -- split mode (no cv) ----------------------------------------------------------
    def _fit(self, X: FloatArray, y: FloatArray) -> None:
        base = self.make_base(self.random_state if isinstance(self.random_state, int) else None)
        self.models_ = [base.fit(self._augment(X), y)]

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        if not self.fits_model:  # nothing to fit: a fresh copy scores the labels
            base = self.make_base(self.random_state if isinstance(self.random_state, int) else None)
            self.models_ = [base.fit(self._augment(X), y)]
        Xa = self._augment(X)
        if not self.scores_only:
            self.models_[0].conformalize(Xa, y)
            return
        u = np.asarray(self._rng_.uniform(size=X.shape[0]), dtype=np.float64)
        scores = label_scores(self.models_[0], Xa, u)
        index = self.scale.index(np.round(y))
        self._store(scores, index, np.zeros(X.shape[0], np.int64), getattr(self, "_groups_conformalize", None))

    # -- calibrate: split or cv, with groups for conditional=group ----------------------
    def calibrate(self, X: Any, y: Any, groups: Any = None) -> ConformalMethod:
        """Fit and conformalize; ``groups`` (one value per row) is needed with ``conditional=group``."""
        if self.conditional == "group":
            if groups is None:
                raise InputError(f"{self.name}: conditional=group needs the rows' groups "
                                 "(judgecp evaluate --mondrian FIELD or --group FIELD)")
            g = np.asarray(groups).astype(str)
            if g.shape[0] != np.shape(y)[0]:
                raise InputError(f"{self.name}: {g.shape[0]} groups for {np.shape(y)[0]} rows")
        else:
            g = None
        if self.cv is None:
            if g is None:
                return super().calibrate(X, y)
            Xa, ya = self._check_xy(X, y)
            if not self.fits_model:
                self._groups_conformalize = g
                return self.conformalize(Xa, ya)
            # ConformalMethod.calibrate's split, keeping each row's group.
            perm = np.random.default_rng(self.random_state).permutation(Xa.shape[0])
            n_fit = min(max(round(self.fit_fraction * Xa.shape[0]), 1), Xa.shape[0] - 1)
            self.fit(Xa[perm[:n_fit]], ya[perm[:n_fit]])
            self._groups_conformalize = g[perm[n_fit:]]
            return self.conformalize(Xa[perm[n_fit:]], ya[perm[n_fit:]])
        self._groups_conformalize = g  # type: ignore[assignment]
        Xa, ya = self._check_xy(X, y)
        self.alpha = float(self.alpha)
        n = Xa.shape[0]
        folds = min(self.cv, n)
        if n < 2:
            raise InputError(f"{self.name}: cv needs at least 2 calibration points, got {n}")
        self._rng_ = np.random.default_rng(self.random_state)
        fold = np.empty(n, np.int64)
        fold[self._rng_.permutation(n)] = np.arange(n) % folds
        Xf = self._augment(Xa)
        u = np.asarray(self._rng_.uniform(size=n), dtype=np.float64)
        index = self.scale.index(np.round(ya))
        self.models_ = []
        parts: list[LabelScores] = []
        for f in range(folds):
            out = fold == f
            base = self.make_base(self._base_seed(f))
            model = base.fit(Xf[~out], ya[~out])
            self.models_.append(model)
            parts.append(label_scores(model, Xf[out], u[out]))
        # Reassemble each component's scores in row order.
        scores: LabelScores = []
        for c, (_, share) in enumerate(parts[0]):
            S = np.empty((n, self.scale.k))
            for f in range(folds):
                S[fold == f] = parts[f][c][0]
            scores.append((S, share))
        self._store(scores, index, fold, g)
        self.fitted_ = True
        self.n_conformalize_ = n
        self.insufficient_ = conformal_rank(n, self._rank_alpha()) > n
        self._predict_seed_ = int(self._rng_.integers(2**63 - 1))
        self.conformalized_ = True
        return self

    # -- shared: cells, counts -------------------------------------------------------
    def _store(
        self, scores: LabelScores, index: NDArray[np.int64], fold: NDArray[np.int64], groups: Any = None
    ) -> None:
        """Keep the true-label scores per (component, cell, fold), sorted, and the cells."""
        self.shares_ = [share for _, share in scores]
        K = self.scale.k
        min_alpha = float(self.alpha) * min(self.shares_)
        counts = np.bincount(index, minlength=K)
        cell = np.zeros(K, np.int64)
        self.pooled_labels_: list[int] = []
        self.pooled_groups_: list[str] = []
        if self.conditional == "label":
            small = [j for j in range(K) if conformal_rank(int(counts[j]), min_alpha) > counts[j]]
            cell = np.arange(K)
            for j in small:
                cell[j] = K  # the pool
            self.pooled_labels_ = [int(self.scale.labels[j]) for j in small]
        self.cell_ = cell
        row_cell = cell[index]
        if self.conditional == "group":
            values, row_group = np.unique(np.asarray(groups).astype(str), return_inverse=True)
            sizes = np.bincount(row_group, minlength=values.size)
            self.group_cell_ = {}
            for i, v in enumerate(values.tolist()):
                small = conformal_rank(int(sizes[i]), min_alpha) > sizes[i]
                self.group_cell_[v] = values.size if small else i  # small groups share the pool
                if small:
                    self.pooled_groups_.append(v)
            row_cell = np.asarray([self.group_cell_[v] for v in values.tolist()], np.int64)[row_group]
        self.n_cell_ = {int(c): int((row_cell == c).sum()) for c in np.unique(row_cell if groups is not None else cell)}
        n_folds = int(fold.max()) + 1 if fold.size else 1
        self.sorted_: list[dict[tuple[int, int], FloatArray]] = []
        for S, _ in scores:
            true = np.take_along_axis(S, index[:, None], axis=1)[:, 0]
            if np.isnan(true).any():
                raise ValueError("conformity scores contain NaN")
            table = {}
            for c in self.n_cell_:
                for f in range(n_folds):
                    table[(c, f)] = np.sort(true[(row_cell == c) & (fold == f)])
            self.sorted_.append(table)
        self.n_folds_ = n_folds

    def predict(self, X: Any, groups: Any = None) -> Prediction:
        """Label sets for new rows (``groups``: their groups, with ``conditional=group``)."""
        if self.conditional == "group":
            if groups is None:
                raise InputError(f"{self.name}: conditional=group needs the rows' groups to predict")
            self._groups_predict = np.asarray(groups).astype(str)
        return super().predict(X)

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        Xa = self._augment(X)
        if not self.scores_only:
            return self.models_[0].predict(Xa)
        n, K = X.shape[0], self.scale.k
        u = np.asarray(rng.uniform(size=n), dtype=np.float64)
        per_model = [label_scores(m, Xa, u) for m in self.models_]
        if self.conditional == "group":  # a row's cell is its group's; unseen groups get every label
            row = np.asarray([self.group_cell_.get(v, -1) for v in self._groups_predict.tolist()], np.int64)
            test_cell = np.repeat(row[:, None], K, axis=1)
        else:
            test_cell = np.repeat(self.cell_[None, :], n, axis=0)
        sets = np.ones((n, K), bool)
        for c, share in enumerate(self.shares_):
            level = float(self.alpha) * share
            for j in range(K):
                for cell in np.unique(test_cell[:, j]).tolist():
                    n_cell = self.n_cell_.get(cell, 0)
                    rank = conformal_rank(n_cell, level)
                    if cell < 0 or rank > n_cell:
                        continue  # too few points even pooled (or an unseen group): label j joins every set
                    rows = test_cell[:, j] == cell
                    count = np.zeros(int(rows.sum()), np.int64)
                    for f, scores in enumerate(per_model):
                        R = self.sorted_[c][(cell, f)]
                        count += np.searchsorted(R, scores[c][0][rows, j] - TOLERANCE, side="left")
                    sets[rows, j] &= count <= rank - 1
        full = None
        if self.conditional == "group":
            full = test_cell[:, 0] < 0
        return Prediction.from_sets(sets, self.scale, full)


def is_group_conditional(spec: str) -> bool:
    """Whether a method spec asks for ``conditional=group`` (calibrated with the rows' groups)."""
    return parse_method_spec(spec)[1].get("conditional") == "group"


def make_variant(
    cls: type[ConformalMethod],
    kwargs: dict[str, Any],
    options: dict[str, Any],
    *,
    alpha: float,
    scale: LikertScale,
    random_state: int | None,
) -> Variant:
    """Wrap ``cls(**kwargs)`` with the variant ``options`` (``conditional``, ``cv``, ``features``)."""

    def make_base(state: int | None) -> ConformalMethod:
        try:
            return cls(alpha, scale=scale, random_state=state, **kwargs)
        except TypeError as exc:
            raise InputError(f"method {cls.name!r}: {exc}") from exc

    fit_fraction = kwargs.get("fit_fraction", 0.5)
    conditional = options.get("conditional")
    if conditional in ("marginal", "none", None):
        conditional = None
    return Variant(
        alpha,
        make_base=make_base,
        conditional=conditional,
        cv=options.get("cv"),
        features=options.get("features"),
        scale=scale,
        fit_fraction=fit_fraction,
        random_state=random_state,
    )
