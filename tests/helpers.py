"""Helpers shared by the tests: synthetic exchangeable judges and the real data."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from judgecp.scale import LikertScale

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("JUDGECP_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the real-data tests need ../shared/data beside the checkout")
    return path


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
