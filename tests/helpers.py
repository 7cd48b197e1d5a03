"""Helpers shared by the tests: synthetic exchangeable judges and the real data."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binom
from scipy.stats import t as student_t

from judgecp.base.scale import LikertScale
from judgecp.data import ScoreData

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("JUDGECP_SHARED_DATA", REPO.parent / "shared" / "data"))


#: The most a Monte-Carlo check may fail on a correct implementation (issue 37): each check's band is set so that
#: its false-failure probability is at most this (a test with several checks splits it among them).
FALSE_FAILURE = 1e-3


def binomial_at_most(rate: float, draws: int, false_failure: float = FALSE_FAILURE) -> int:
    """The count of events out of ``draws`` that a true ``rate`` exceeds with probability at most ``false_failure``
    (the Binomial(draws, rate) quantile at ``1 - false_failure``): ``count <= binomial_at_most(...)`` is the check."""
    return int(binom.ppf(1.0 - false_failure, draws, rate))


def binomial_at_least(rate: float, draws: int, false_failure: float = FALSE_FAILURE) -> int:
    """The count a true ``rate`` falls below with probability at most ``false_failure``:
    ``count >= binomial_at_least(...)`` is the check (e.g. a coverage rate of ``1 - alpha`` over ``draws``)."""
    return int(binom.ppf(false_failure, draws, rate))


def mean_margin(values: Any, false_failure: float = FALSE_FAILURE) -> float:
    """One-sided Monte-Carlo margin of the mean of ``values`` (independent draws): Student's t quantile at
    ``1 - false_failure`` with ``n - 1`` degrees of freedom times the standard error (the mean of the tens to
    hundreds of draws here is close to normal; t, not z, for the estimated standard deviation)."""
    v = np.asarray(values, dtype=np.float64)
    return float(student_t.ppf(1.0 - false_failure, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))


def measure_script() -> Any:
    """scripts/measure_ppi_compare.py, whose seeded experiments the tests run at a smaller size (issue 32)."""
    name = "measure_ppi_compare"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / "measure_ppi_compare.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses and pickles need the module registered
        spec.loader.exec_module(module)
    return sys.modules[name]


def coverage_floor(level: float, draws: int, false_failure: float = FALSE_FAILURE) -> float:
    """The lowest coverage rate an interval of coverage ``level`` shows over ``draws`` independent draws but with
    probability at most ``false_failure``: :func:`binomial_at_least` as a rate (``rate >= coverage_floor(...)``)."""
    return binomial_at_least(level, draws, false_failure) / draws


def shared_file(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the real-data tests need ../shared/data beside the checkout")
    return path


def write_likert_csv(path: Path, data: ScoreData, **extra: Sequence[Any]) -> Path:
    """A features table of a simulated Likert judge, written as the seed paper's CSVs are: ``sample_id``,
    ``s2_lp1`` .. ``s2_lp5``, ``gt_score``, ``parsed_score``, then one column per ``extra`` keyword."""
    lines = [",".join(["sample_id", "s2_lp1", "s2_lp2", "s2_lp3", "s2_lp4", "s2_lp5", "gt_score", "parsed_score",
                       *extra])]
    for i in range(data.n):
        logprobs = ",".join(f"{v:.8f}" for v in data.logprobs[i])
        cells = "".join(f",{values[i]}" for values in extra.values())
        lines.append(f"{data.ids[i]},{logprobs},{data.labels[i]:.1f},{data.parsed[i]}{cells}")
    path.write_text("\n".join(lines) + "\n")
    return path


def cheap_spec(name: str, *, epochs: int, rounds: int, levels: int) -> str:
    """The method spec ``name`` with its cost knob turned down, where it has one; any other spec as it is.

    The knobs: r2ccp's ``epochs``, the boosted methods' ``max_rounds`` (``rounds``), chr's ``n_levels``
    (``levels``). Their guarantee holds at any value; each test module picks what its checks need.
    """
    knob = {"r2ccp": f"epochs={epochs}", "boosted_cqr": f"max_rounds={rounds}", "boosted_lcp": f"max_rounds={rounds}",
            "chr": f"n_levels={levels}"}
    return f"{name}({knob[name]})" if name in knob else name


def repeated_coverage(
    spec: str,
    draw: Callable[[int], tuple[np.ndarray, np.ndarray]],
    coverage: Callable[[Any, np.ndarray, np.ndarray], Any],
    *,
    n_cal: int,
    n_test: int,
    alpha: float,
    reps: int,
    scale: LikertScale | None = None,
) -> np.ndarray:
    """The coverage of method ``spec`` calibrated end to end, once per repetition (one row each).

    Repetition ``r`` builds the method with ``random_state=r``, calibrates it
    on ``draw(n_cal)`` and returns ``coverage(method, *draw(n_test))`` (a
    number, or one per label).
    """
    from judgecp.kinds.registry import build_method

    rows = []
    for r in range(reps):
        method = build_method(spec, alpha=alpha, scale=scale or LikertScale(), random_state=r)
        method.calibrate(*draw(n_cal))
        rows.append(coverage(method, *draw(n_test)))
    return np.asarray(rows)


def judge_draw(
    n: int, rng: np.random.Generator, *, continuous: bool = False, scale: LikertScale | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """An exchangeable sample from a fixed synthetic judge (X = score logprobs, y = labels).

    Labels are integers on the scale, or continuous values on [min, max]
    when ``continuous`` (for the two-sided band of interval methods).
    """
    scale = scale or LikertScale()
    centre, spread = (scale.minimum + scale.maximum) / 2, scale.span / 3.5
    z = rng.normal(size=n)
    noise_scale = np.where(rng.random(n) < 0.5, 0.5, 1.4)  # heteroscedastic
    latent = z + rng.normal(scale=0.6, size=n)
    if continuous:
        y = scale.minimum + scale.span / (1 + np.exp(-1.2 * latent))
    else:
        y = np.clip(np.round(centre + spread * latent), scale.minimum, scale.maximum)
    perceived = centre + spread * (0.7 * z + 0.3 + rng.normal(size=n) * noise_scale)
    labels = scale.labels.astype(float)
    logits = -((labels[None, :] - perceived[:, None]) ** 2) / (2 * 0.6**2)
    X = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    return X, y
