"""Mutation testing's survivors of judgecp.stats.ppi (issue 37, docs/testing.md): what ppi_items, ppi_mean and
stratification report and refuse, pinned on small inputs worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from judgecp.base.errors import InputError
from judgecp.stats.ppi import ppi_items, ppi_mean, stratification


def _sample(rng: np.random.Generator, n: int = 30, m: int = 300, slope: float = 1.0) -> tuple[np.ndarray, ...]:
    y = rng.normal(size=n)
    return y, slope * y + rng.normal(scale=0.5, size=n), slope * rng.normal(size=m)


def test_stratification_reports_what_it_did() -> None:
    col = np.array(["b", "a", "b", "c"])
    labeled = np.array([True, True, False, True])
    assert stratification(None, labeled, "yes") == (None, {"stratified": False, "reason": "no group field"})
    strata, info = stratification(col, labeled, "yes")
    assert strata is col and info == {"stratified": True, "strata": ["a", "b", "c"]}
    assert stratification(col, labeled, "no") == (None, {"stratified": False, "reason": "--stratify no"})


def test_ppi_items_defaults_clip_lambda_and_report_conventions() -> None:
    """The default clips the power-tuned lambda to [0, 1]: a proxy that runs against the labels gets lambda 0 (the
    labeled-only estimate), unclipped it is negative; the result names its conventions; a proxy with spread is not
    degenerate; every item has a proxy, so there is no no-proxy report."""
    rng = np.random.default_rng(1)
    y, f_l, f_u = _sample(rng, slope=-1.0)
    y_items, f_items = np.concatenate([y, np.full(f_u.size, np.nan)]), np.concatenate([f_l, f_u])
    default = ppi_items(y_items, f_items)
    assert default == ppi_items(y_items, f_items, clip=True)
    unclipped = ppi_items(y_items, f_items, clip=False)
    assert default["estimate"]["ppi"] != unclipped["estimate"]["ppi"]
    assert default["estimate"]["ppi"]["mean"] == pytest.approx(float(np.mean(y)))
    assert default["conventions"] == "small-sample"
    assert "degenerate" not in default and "no_proxy" not in default


def test_ppi_items_refuses_an_infinite_label_alone() -> None:
    with pytest.raises(InputError, match="infinite"):
        ppi_items(np.array([1.0, np.inf, np.nan]), np.array([1.0, 2.0, 3.0]))


def test_ppi_items_keeps_strata_and_reports_no_proxy_items() -> None:
    """Items without a proxy (3 labeled: their own stratum) beside two strata: the strata are kept for the proxied
    items, and the no-proxy report gives its weight and its labels' own interval."""
    rng = np.random.default_rng(2)
    y = rng.normal(size=60)
    f = y + rng.normal(scale=0.5, size=60)
    y[20:40] = np.nan  # unlabeled
    f[55:] = np.nan  # no proxy: 5 items, all labeled
    strata = np.array(["a", "b"] * 30)
    out = ppi_items(y, f, strata=strata)
    assert set(out["strata"]) == {"a", "b"}
    assert out["no_proxy"]["n"] == 5 and out["no_proxy"]["n_labeled"] == 5
    assert out["no_proxy"]["weight"] == pytest.approx(5 / 60)
    assert out["no_proxy"]["labeled_only"]["mean"] == pytest.approx(float(np.mean(y[55:])))


def test_ppi_items_names_a_constant_proxy() -> None:
    y = np.array([1.0, 2.0, 4.0, np.nan, np.nan])
    out = ppi_items(y, np.full(5, 3.0))
    assert out["degenerate"] == ["the judge's proxy has no spread (every proxy 3): the interval is the labels' alone"]


def test_ppi_mean_refusals_and_its_smallest_sample() -> None:
    """NaN labels are named as labels; a stratum with unlabeled items but no labeled ones is refused, named as
    the user wrote it (not numpy's repr); 2 labels are
    enough (1 is not)."""
    with pytest.raises(InputError, match="PPI: the labels contain NaN"):
        ppi_mean([1.0, np.nan], [1.0, 2.0], [1.0])
    with pytest.raises(InputError, match=r"stratum \['c'\] has unlabeled items but no labeled ones"):
        ppi_mean([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0], groups_labeled=["a", "a", "b", "b"],
                 groups_unlabeled=["a", "c"])
    out = ppi_mean([1.0, 3.0], [1.5, 2.0], [1.0, 2.0, 3.0])
    assert out["n_labeled"] == 2 and out["n_unlabeled"] == 3
    with pytest.raises(InputError, match="at least 2 labeled items"):
        ppi_mean([1.0], [1.0], [1.0, 2.0])


def test_automatic_strata_count_labeled_clusters_not_items() -> None:
    """Mutation testing's survivors (docs/testing.md): with clusters, ``--stratify auto`` counts a group's labeled
    clusters (its labels within one cluster are not independent), not its labeled items. Group ``a``: 30 labels
    in 2 clusters, below the 10 a stratum needs, so it is merged and nothing is stratified; counting items (``units``
    not passed on) would keep both strata."""
    col = np.array(["a"] * 30 + ["b"] * 30)
    labeled = np.ones(60, dtype=bool)
    units = np.array([f"a{i % 2}" for i in range(30)] + [f"b{i}" for i in range(30)])
    strata, info = stratification(col, labeled, "auto", units=units)
    assert strata is None and info["stratified"] is False
    by_items, info_items = stratification(col, labeled, "auto")
    assert by_items is not None and info_items["stratified"] is True and set(by_items.tolist()) == {"a", "b"}
