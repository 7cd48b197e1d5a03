"""Synthetic judges with known behaviour, for tests, benchmarks and the example run.

Nothing here is a real model's output: the example report says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from judgecp.data import LikertData
from judgecp.scale import LikertScale


def simulate_likert_judge(
    n: int = 2000,
    *,
    seed: int = 0,
    scale: LikertScale | None = None,
    groups: Sequence[tuple[str, float]] = (("easy", 0.5), ("medium", 1.0), ("hard", 1.6)),
    human_noise: float = 0.6,
    judge_bias: float = 0.3,
    temperature: float = 0.6,
    compression: float = 0.7,
) -> LikertData:
    """A judge that ranks better than it scores, like the ones in the seed paper.

    Each item has a latent quality ``z ~ N(0, 1)``; the human label is
    ``z`` plus annotation noise, mapped to the scale and rounded. The judge
    sees ``compression * z + judge_bias`` plus noise whose size depends on the
    item's group (``groups``: name and noise scale, assigned uniformly), and
    puts a softmax with ``temperature`` around its perceived score. The rows
    are exchangeable, so every conformal guarantee applies exactly.
    """
    scale = scale or LikertScale()
    rng = np.random.default_rng(seed)
    centre = (scale.minimum + scale.maximum) / 2
    spread = scale.span / 3.5
    g = rng.integers(len(groups), size=n)
    z = rng.normal(size=n)
    human = np.clip(np.round(centre + spread * (z + rng.normal(scale=human_noise, size=n))), scale.minimum, scale.maximum)
    noise = np.asarray([s for _, s in groups])[g]
    perceived = centre + spread * (compression * z + judge_bias + rng.normal(size=n) * noise)
    labels = scale.labels.astype(np.float64)
    logits = -((labels[None, :] - perceived[:, None]) ** 2) / (2 * temperature**2)
    logprobs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    data = LikertData.from_arrays(
        logprobs,
        human,
        scale=scale,
        ids=[f"item{i:05d}" for i in range(n)],
        fields={"group": np.asarray([groups[i][0] for i in g])},
    )
    data.source = f"example: synthetic judge (simulate_likert_judge, n={n}, seed={seed}); not a real model"
    return data
