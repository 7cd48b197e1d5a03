"""CHR's chain counted on its segments equals the per-level pass, exactly (issue 14, speed).

``nested_range_segments`` replaces a pass over every one of CHR's 1,000
levels by a few binary searches; it must give the very same range at every
level (ties, near-degenerate probabilities and every start level included),
or CHR's numbers would change.
"""

from __future__ import annotations

import numpy as np
import pytest

from judgecp.base.scale import LikertScale
from judgecp.stats.conformal import Prediction
from judgecp.stats.methods.histogram import (
    CHR,
    chain_at,
    contiguous_ranges,
    first_covering,
    nested_range_segments,
    nested_shortest_ranges,
)
from tests.helpers import judge_draw


def probability_rows(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet rows of every concentration, one-hot-ish rows (masses within 1e-12 of 1), exact ties."""
    parts = [rng.dirichlet(np.full(k, c), size=n) for c in (0.05, 0.3, 1.0, 5.0)]
    sharp = np.full((n, k), 1e-14)
    sharp[np.arange(n), rng.integers(0, k, n)] = 1.0
    parts.append(sharp / sharp.sum(axis=1, keepdims=True))
    parts.append(np.full((n, k), 1.0 / k))  # every equal-length range ties
    grid = rng.integers(0, 4, size=(n, k)).astype(float) + 1e-3  # masses on a coarse grid: many ties
    parts.append(grid / grid.sum(axis=1, keepdims=True))
    return np.vstack(parts)


@pytest.mark.parametrize("k", [2, 3, 5, 7])
@pytest.mark.parametrize(("n_levels", "start"), [(1000, 0.9), (1000, 0.5), (37, 0.8), (200, 0.999), (50, 0.0)])
def test_segments_equal_the_per_level_chain(k: int, n_levels: int, start: float) -> None:
    rng = np.random.default_rng([k, n_levels])
    P = probability_rows(150, k, rng)
    levels = np.linspace(0.0, 1.0, n_levels + 1)[1:]
    chain = nested_shortest_ranges(P, levels, start)
    lo, ranges = nested_range_segments(P, levels, start)
    assert (lo[:, 0] == 0).all() and (np.diff(lo, axis=1) >= 0).all()
    for j in range(n_levels):
        assert (chain_at(lo, ranges, j) == chain[:, j]).all(), j
    a, b = contiguous_ranges(k)
    for t in range(k):  # the first level whose range holds label t (n_levels: none)
        holds = (a[chain] <= t) & (b[chain] >= t)
        expect = np.where(holds.any(axis=1), np.argmax(holds, axis=1), n_levels)
        assert (first_covering(lo, ranges, k, n_levels)[:, t] == expect).all(), t


def test_chr_threshold_and_sets_unchanged() -> None:
    """CHR calibrated through the segments gives the threshold and ranges of the per-level pass."""
    scale = LikertScale()
    rng = np.random.default_rng(3)
    Xc, yc = judge_draw(800, rng)
    Xt, _ = judge_draw(600, rng)
    m = CHR(0.1, scale=scale, random_state=0).calibrate(Xc, yc)
    # The per-level reference: CHR's own definition, counted on the full chain.
    fit = np.random.default_rng(0).permutation(800)[400:]
    a, b = contiguous_ranges(scale.k)
    chain = m._chain(Xc[fit])
    label = scale.index(yc[fit])[:, None]
    first = np.argmax((a[chain] <= label) & (b[chain] >= label), axis=1)
    assert m.threshold_ == m._quantile(m.levels[first])
    j = int(np.searchsorted(m.levels, m.threshold_ - 1e-12))
    ranges = m._chain(Xt)[:, j]
    pred = m.predict(Xt)
    expect = Prediction.from_interval(a[ranges] + scale.minimum - 0.5, b[ranges] + scale.minimum + 0.5, scale)
    assert np.array_equal(pred.lower, expect.lower) and np.array_equal(pred.upper, expect.upper)
    assert np.array_equal(pred.sets, expect.sets)


@pytest.mark.parametrize("spec", ["boosted_lcp(max_rounds=15)", "boosted_cqr(max_rounds=15)"])
def test_boosted_trees_unchecked_path_is_bit_identical(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trees fed float32 features converted once (no per-call checks) give the checked path's intervals."""
    import judgecp.stats.methods.boosted as boosted
    from judgecp.kinds.registry import build_method

    scale = LikertScale()
    rng = np.random.default_rng(4)
    Xc, yc = judge_draw(600, rng)
    Xt, _ = judge_draw(400, rng)
    fast = build_method(spec, alpha=0.1, scale=scale, random_state=1).calibrate(Xc, yc).predict(Xt)
    monkeypatch.setattr(boosted, "_tree_input", lambda F: np.asarray(F, dtype=np.float64))  # sklearn's checks
    checked = build_method(spec, alpha=0.1, scale=scale, random_state=1).calibrate(Xc, yc).predict(Xt)
    assert np.array_equal(fast.lower, checked.lower) and np.array_equal(fast.upper, checked.upper)


def test_bench_fitted_command_writes_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    """``judgecp bench fitted`` runs and writes one row per method (its timings are never asserted)."""
    from judgecp.cli import main

    assert main(["bench", "fitted", "--rows", "400", "--repeats", "1", "--methods", "chr,lvd(cv=2)"]) == 0
    out = capsys.readouterr().out
    assert "| naive |" in out and "| chr |" in out and "| lvd(cv=2) |" in out


def _hgb_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """CQR's model features of a simulated judge, plus a column with NaN, infinities and ties."""
    from judgecp.stats.features import model_features
    from judgecp.synthetic.judges import simulate_likert_judge

    data = simulate_likert_judge(n=n, seed=seed)
    rng = np.random.default_rng(seed)
    odd = rng.integers(0, 6, n).astype(float)
    odd[rng.random(n) < 0.05] = np.nan
    odd[rng.random(n) < 0.02] = np.inf
    odd[rng.random(n) < 0.02] = -np.inf
    return np.column_stack([model_features(data.logprobs, LikertScale()), odd]), data.labels.astype(float)


def test_binned_tree_prediction_is_bit_identical_to_predict(monkeypatch: pytest.MonkeyPatch) -> None:
    """Histogram boosting predicted from bins, in blocks, with bins shared: exactly ``predict``."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    import judgecp.stats.features as features
    from judgecp.stats.methods.quantile_regression import quantile_regressor

    F, y = _hgb_rows(3000, seed=5)
    lower = quantile_regressor("gbm", 0.05, 1).fit(F[:1000], y[:1000])
    upper = quantile_regressor("gbm", 0.95, 1).fit(F[:1000], y[:1000])
    other = HistGradientBoostingRegressor(max_iter=30, random_state=0).fit(F[1000:1400], y[1000:1400])  # other bins
    for model in (lower, upper, other):  # the binned path itself, without the first block's check
        trees = features._BinnedTrees.of(model)
        assert trees is not None and np.array_equal(trees.predict(trees.bin(F)), model.predict(F))
    binned = 0
    bin_rows = features._BinnedTrees.bin

    def counted(self: features._BinnedTrees, rows: np.ndarray) -> object:
        nonlocal binned
        binned += 1
        return bin_rows(self, rows)

    monkeypatch.setattr(features._BinnedTrees, "bin", counted)
    got = features.predict_many_in_blocks([lower, upper, other], F, block=256)
    for model, values in zip([lower, upper, other], got, strict=True):
        assert np.array_equal(values, model.predict(F))
    assert binned == 2  # lower and upper share their bins; other has its own
    assert np.array_equal(features.predict_in_blocks(upper, F[:100]), upper.predict(F[:100]))


def test_tree_prediction_falls_back_to_predict(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another model, or binned trees that disagree with ``predict``, are predicted by ``predict``."""
    from sklearn.linear_model import LinearRegression

    import judgecp.stats.features as features
    from judgecp.stats.methods.quantile_regression import quantile_regressor

    F, y = _hgb_rows(1500, seed=6)
    F = np.nan_to_num(F, posinf=9.0, neginf=-9.0)
    linear = LinearRegression().fit(F, y)
    assert features._BinnedTrees.of(linear) is None
    assert np.array_equal(features.predict_in_blocks(linear, F, block=100), linear.predict(F))
    model = quantile_regressor("gbm", 0.5, 2).fit(F, y)
    trees = features._BinnedTrees.of(model)
    assert trees is not None
    trees.baseline += 1.0  # what a changed scikit-learn could do: the first block's check catches it
    monkeypatch.setattr(features._BinnedTrees, "of", classmethod(lambda cls, m: trees))
    assert np.array_equal(features.predict_in_blocks(model, F, block=100), model.predict(F))


@pytest.mark.parametrize("repeated", [True, False])
def test_binned_prediction_of_repeated_rows_is_bit_identical(repeated: bool) -> None:
    """Rows whose bins repeat are predicted once and scattered back; distinct rows skip the sort."""
    import judgecp.stats.features as features
    from judgecp.stats.methods.quantile_regression import quantile_regressor

    F, y = _hgb_rows(4000, seed=7)
    F = np.nan_to_num(F, posinf=9.0, neginf=-9.0)
    rng = np.random.default_rng(8)
    F[:, -1] = rng.normal(size=F.shape[0])  # a continuous column: every row distinct
    if repeated:
        pick = rng.integers(0, 150, size=F.shape[0])  # 150 distinct rows, in random order
        F, y = F[pick], y[pick] + rng.normal(scale=0.3, size=F.shape[0])
    lower = quantile_regressor("gbm", 0.25, 1).fit(F[:1500], y[:1500])
    upper = quantile_regressor("gbm", 0.75, 1).fit(F[:1500], y[:1500])
    trees = features._BinnedTrees.of(lower)
    assert trees is not None
    first, inverse = features._distinct_rows(trees.bin(F), 256)
    assert (first is not None) == repeated
    if repeated:
        assert first.size <= 150 and inverse.shape == (F.shape[0],)
    got = features.predict_many_in_blocks([lower, upper], F, block=256)
    assert np.unique(got[0]).size > 5 and np.unique(got[1]).size > 5  # the models vary from row to row
    assert np.array_equal(got[0], lower.predict(F)) and np.array_equal(got[1], upper.predict(F))


def test_rows_dropped_method_by_method_give_the_same_report() -> None:
    """Without groups or a sweep each method's rows are dropped once its tables are written, interval
    methods last; with a group field every row is kept. The methods' entries and their order are the same."""
    import judgecp
    from judgecp.base.memory import release_freed_memory

    data = judgecp.simulate_likert_judge(n=1500, seed=9)
    methods = ("naive", "lac", "cqr", "aps")
    dropped = judgecp.evaluate(data, judgecp.Protocol(methods=methods, splits=3))
    kept = judgecp.evaluate(data, judgecp.Protocol(methods=methods, splits=3, group="group"))
    assert list(dropped["methods"]) == list(kept["methods"]) == list(methods)
    assert dropped["methods"] == kept["methods"]
    for spec in methods:
        by_group = {k: v for k, v in kept["conditional_coverage"][spec].items() if k not in ("by_group", "worst")}
        assert {k: v for k, v in dropped["conditional_coverage"][spec].items() if k != "worst"} == by_group
    import platform

    assert release_freed_memory() is (platform.libc_ver()[0] == "glibc")  # glibc gives pages back; others: a no-op


@pytest.mark.parametrize("k", [3, 8, 11])
def test_distinct_binned_rows_are_numpys_unique_rows(k: int) -> None:
    """One row per distinct binned row (packed into 64 bits up to 8 features, compared as bytes above)."""
    import judgecp.stats.features as features

    rng = np.random.default_rng(k)
    pool = rng.integers(0, 256, size=(40, k)).astype(np.uint8)  # 40 rows, bytes across the whole range
    pool[1] = pool[0]
    pool[1, -1] ^= 1  # two rows that differ in the last byte only, two in the first only
    pool[3] = pool[2]
    pool[3, 0] ^= 1
    B = pool[rng.integers(0, 40, size=5000)]
    B[4000:4003] = rng.integers(0, 256, size=(3, k))  # rows first seen after the first block
    B[4500] = B[4000]
    first, inverse = features._distinct_rows(B, 512)
    assert first is not None and inverse is not None
    unique = np.unique(B, axis=0)
    assert first.size == unique.shape[0]
    assert np.array_equal(B[first][inverse], B)  # every row is its representative
    assert np.array_equal(np.unique(B[first], axis=0), unique)  # each distinct row once
    assert features._distinct_rows(rng.integers(0, 256, size=(5000, k)).astype(np.uint8), 512) == (None, None)


def test_counted_strata_give_the_masked_means() -> None:
    """Integer strata are counted in one pass (bincount); every number equals the per-stratum mask's."""
    from judgecp.stats.coverage import stratum_means

    rng = np.random.default_rng(11)
    n = 20_000
    strata = rng.integers(-2, 4, n).astype(np.int8)
    columns = {"covered": rng.random(n) < 0.9, "width": rng.integers(0, 5, n).astype(np.uint8),
               "size": rng.integers(0, 300, n).astype(np.int64), "mid": rng.normal(size=n)}
    values = [np.int64(v) for v in (-2, -1, 0, 1, 2, 3, 7, -9)]  # two values no row has
    got = stratum_means(strata, values, columns)
    assert list(got) == values[:6]
    for v in values[:6]:
        mask = strata == v
        assert got[v] == {
            "n": float(mask.sum()),
            "covered": np.count_nonzero(columns["covered"] & mask) / mask.sum(),
            "width": float(columns["width"][mask].sum()) / mask.sum(),
            "size": float(columns["size"][mask].sum()) / mask.sum(),
            "mid": float(columns["mid"][mask].mean()),
        }
    as_text = stratum_means(strata.astype(str), [str(v) for v in values], columns)  # the masked path
    assert [e for e in as_text.values()] == [got[v] for v in values[:6]]


def test_log_softmax_once_shares_one_read_only_result_per_array() -> None:
    """Inside the block each held array's log-softmax is computed once (the same read-only array, the same
    numbers); other arrays, and every array after the block, are computed as usual."""
    import judgecp.stats.features as features
    from judgecp.base.scale import LikertScale

    scale, rng = LikertScale(), np.random.default_rng(12)
    X, other = rng.normal(size=(500, 5)), rng.normal(size=(300, 5))
    plain = features.judge_log_softmax(X, scale)
    with features.log_softmax_once(X):
        first = features.judge_log_softmax(X, scale)
        with features.log_softmax_once(X, other):  # nested: the inner block must not end the outer's hold
            assert features.judge_log_softmax(X, scale) is first
        assert features.judge_log_softmax(X, scale) is first
        assert features.judge_log_softmax(other, scale) is not features.judge_log_softmax(other, scale)
        assert features.judge_log_softmax(X.copy(), scale) is not first
        assert not first.flags.writeable and np.array_equal(first, plain)
        assert np.array_equal(features.judge_probabilities(X, scale), np.exp(plain))
        assert features.judge_log_softmax(X, LikertScale(1, 4)).shape == (500, 4)  # another scale, its own result
    after = features.judge_log_softmax(X, scale)
    assert after is not first and after.flags.writeable and np.array_equal(after, plain)


def test_conditional_cells_of_integer_strata_are_the_sorted_ones() -> None:
    """Integer strata's cells (values found by counting) equal the cells of the same strata as text (sorted)."""
    from judgecp.stats.conditional import cells

    rng = np.random.default_rng(13)
    strata = rng.choice(np.array([-3, 0, 2, 9]), size=5000).astype(np.int64)
    covered, width = rng.random(5000) < 0.8, rng.integers(0, 4, 5000).astype(np.uint8)
    counted = cells(covered, width, strata, 10)
    assert list(counted) == ["-3", "0", "2", "9"]
    assert counted == cells(covered, width, strata.astype(str), 10)
    narrow = rng.choice(np.array([-100, 0, 100], dtype=np.int8), size=5000)  # 100 - (-100) overflows int8
    assert list(cells(covered, width, narrow, 10)) == ["-100", "0", "100"]
    assert cells(covered, width, narrow, 10) == cells(covered, width, narrow.astype(str), 10)


def _ranking_along_axis(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """APS's masses and ranks as first written: take_along_axis / put_along_axis over a stable argsort."""
    order = np.argsort(-P, axis=1, kind="stable")
    cumsum = np.empty_like(P)
    np.put_along_axis(cumsum, order, np.cumsum(np.take_along_axis(P, order, axis=1), axis=1), axis=1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(1, P.shape[1] + 1)[None, :].repeat(P.shape[0], 0), 1)
    return cumsum, rank


@pytest.mark.parametrize("k", [2, 5, 11])
@pytest.mark.parametrize("layout", ["C", "F", "reversed columns"])
def test_flat_index_ranking_equals_along_axis(k: int, layout: str) -> None:
    """rank_labels gathers and scatters through flat indices: the very masses and ranks of the along-axis
    form, for ties and for inputs that are not C-contiguous (a scatter into a copy would lose them)."""
    from judgecp.stats.methods.sets import rank_labels

    P = probability_rows(300, k, np.random.default_rng(k))
    P = {"C": P, "F": np.asfortranarray(P), "reversed columns": P[:, ::-1]}[layout]
    cumsum, rank = _ranking_along_axis(P)
    ranking = rank_labels(P)
    assert np.array_equal(ranking.cumsum_incl, cumsum)
    assert np.array_equal(ranking.rank, rank)


def _greedy_mass_two_dimensional(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ordinal APS's grown-range masses as first written, with ``P[rows, label]`` indexing."""
    n, k = P.shape
    rows = np.arange(n)
    after, before = np.zeros_like(P), np.zeros_like(P)
    lo = np.argmax(P, axis=1)
    hi = lo.copy()
    mass = P[rows, lo].copy()
    after[rows, lo] = mass
    for _ in range(k - 1):
        left = np.where(lo > 0, P[rows, np.maximum(lo - 1, 0)], -1.0)
        right = np.where(hi < k - 1, P[rows, np.minimum(hi + 1, k - 1)], -1.0)
        go_left = left >= right
        lo = np.where(go_left, lo - 1, lo)
        hi = np.where(go_left, hi, hi + 1)
        joined = np.where(go_left, lo, hi)
        before[rows, joined] = mass
        mass = mass + P[rows, joined]
        after[rows, joined] = mass
    return after, before


@pytest.mark.parametrize("k", [2, 5, 11])
@pytest.mark.parametrize("layout", ["C", "F", "reversed columns"])
def test_flat_index_greedy_mass_equals_two_dimensional(k: int, layout: str) -> None:
    """greedy_contiguous_mass through flat indices: the very after/before masses (ties go left), any layout."""
    from judgecp.stats.methods.ordinal import greedy_contiguous_mass

    P = probability_rows(300, k, np.random.default_rng(k + 1))
    P = {"C": P, "F": np.asfortranarray(P), "reversed columns": P[:, ::-1]}[layout]
    after, before = greedy_contiguous_mass(P)
    want_after, want_before = _greedy_mass_two_dimensional(P)
    assert np.array_equal(after, want_after)
    assert np.array_equal(before, want_before)


@pytest.mark.parametrize("k", [1, 2, 5, 8, 9, 11])
@pytest.mark.parametrize("layout", ["C", "F", "reversed columns"])
def test_set_shapes_looked_up_by_bits_equal_the_per_row_passes(k: int, layout: str) -> None:
    """Row metrics read each set's bounds, width and size from a table indexed by the set's bits (K <= 8):
    the very values of label_bounds and a row sum, empty and full sets included, any layout; K > 8 passes
    rows as before."""
    from judgecp.stats.coverage import _bounds_width_size, label_bounds

    rng = np.random.default_rng(k)
    sets = rng.random((2000, k)) < rng.choice([0.05, 0.5, 0.95], size=(2000, 1))
    sets[:3] = [[False] * k, [True] * k, [j == k - 1 for j in range(k)]]
    sets = {"C": sets, "F": np.asfortranarray(sets), "reversed columns": sets[:, ::-1]}[layout]
    count = np.min_scalar_type(k)
    lo, hi, width, size = _bounds_width_size(sets, 3, count)
    want_lo, want_hi = label_bounds(sets, 3)
    assert np.array_equal(lo, want_lo, equal_nan=True) and np.array_equal(hi, want_hi, equal_nan=True)
    assert np.array_equal(width, np.nan_to_num(want_hi - want_lo, nan=0.0).astype(count)) and width.dtype == count
    assert np.array_equal(size, sets.sum(axis=1)) and size.dtype == count


def test_cqr_features_of_the_kept_fit_rows_alone_give_the_same_models() -> None:
    """CQR subsamples its fit rows before computing their features (not the features of every fit row,
    then a subsample): the features are row by row, so the models and predictions are the very same."""
    from judgecp.stats.features import model_features
    from judgecp.stats.methods import quantile_regression
    from judgecp.stats.methods.quantile_regression import CQR

    class FeaturesFirst(CQR):
        def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
            F = model_features(X, self.scale)
            seed = int(self._rng_.integers(2**31 - 1))
            keep = np.sort(np.random.default_rng(seed).choice(y.size, size=self.max_fit_rows, replace=False))
            F, y = F[keep], y[keep]
            self.lower_model_ = quantile_regression.quantile_regressor("gbm", self.alpha / 2, seed).fit(F, y)
            self.upper_model_ = quantile_regression.quantile_regressor("gbm", 1 - self.alpha / 2, seed).fit(F, y)

    rng = np.random.default_rng(5)
    X, y = judge_draw(3000, rng)
    Xt, _ = judge_draw(2000, rng)
    ours = CQR(0.1, max_fit_rows=400, random_state=3).calibrate(X, y).predict(Xt)
    reference = FeaturesFirst(0.1, max_fit_rows=400, random_state=3).calibrate(X, y).predict(Xt)
    assert np.array_equal(ours.lower, reference.lower) and np.array_equal(ours.upper, reference.upper)
