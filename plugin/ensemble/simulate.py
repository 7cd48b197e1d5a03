"""A seeded pairwise judge whose prompts are reliable only on some clusters of images.

Items fall into ``n_clusters`` clusters of embeddings (unit vectors around
random centroids). Each item has a human preference strength
``s ~ N(0, strength_sd)``; the human prefers the first candidate ("A",
class 0) with probability ``sigmoid(s)``. Every prompt is *reliable* on one
cluster (prompt a on cluster ``a mod n_clusters``) and unreliable on the
others:

* reliable: the judge's log-odds for "A" are ``s + reliable_noise * e``
  (close to calibrated);
* unreliable: ``nuisance_slope * (u + unreliable_noise * e)``, where ``u ~
  N(0, strength_sd)`` is a nuisance attribute of the item, the same for all
  prompts and independent of the human label (say, the brighter image): the
  prompts agree with each other, confidently, and averaging them does not
  cancel the error.

The *planted weights* are the population optimum of eq. (11) with the true
clusters, ``w*_za = softmax_a(E[log p(y|x,a) | z])``; the expectations (one
for reliable, one for unreliable prompts) are Monte Carlo averages over
400,000 draws with a fixed seed (standard error below 0.003). A mixture
fitted on enough validation items should recover them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, log_expit

from judgecp.errors import InputError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

#: Draws (and seed) of the Monte Carlo expectations behind the planted weights.
EXPECTATION_DRAWS = 400_000
EXPECTATION_SEED = 20_240_917
#: Class order of the simulated pairs: index 0 = the first candidate ("A").
CLASSES = ("A", "B")


@dataclass(frozen=True)
class SimulatedPrompts:
    """Per-prompt answer distributions of a simulated judge, with the truth behind them."""

    log_probs: FloatArray  #: (items, prompts, 2), normalised; class 0 = "A"
    labels: IntArray  #: (items,) 0 = "A" preferred, 1 = "B"
    embeddings: FloatArray  #: (items, dim), unit rows
    cluster: IntArray  #: (items,) true cluster
    centroids: FloatArray  #: (clusters, dim)
    reliable: NDArray[np.bool_]  #: (clusters, prompts)
    expected_log_lik: FloatArray  #: (clusters, prompts): E[log p(y|x,a) | z]
    planted_weights: FloatArray  #: (clusters, prompts): softmax of expected_log_lik


def _judge_log_odds(
    strength: FloatArray,
    nuisance: FloatArray,
    reliable: NDArray[np.bool_],
    noise: FloatArray,
    params: tuple[float, float, float],
) -> FloatArray:
    reliable_noise, nuisance_slope, unreliable_noise = params
    out: FloatArray = np.where(
        reliable,
        strength[:, None] + reliable_noise * noise,
        nuisance_slope * (nuisance[:, None] + unreliable_noise * noise),
    )
    return out


def _draw_labels(strength: FloatArray, rng: np.random.Generator) -> IntArray:
    out: IntArray = (rng.random(strength.shape) >= expit(strength)).astype(np.intp)
    return out


def _log_probs(log_odds: FloatArray) -> FloatArray:
    out: FloatArray = np.stack([log_expit(log_odds), log_expit(-log_odds)], axis=-1)
    return out


@functools.lru_cache(maxsize=32)
def _expected_log_lik(strength_sd: float, params: tuple[float, float, float]) -> tuple[float, float]:
    """E[log p(y|x,a)] for a reliable and an unreliable prompt (Monte Carlo, fixed seed)."""
    rng = np.random.default_rng(EXPECTATION_SEED)
    n = EXPECTATION_DRAWS
    strength = rng.normal(0.0, strength_sd, size=n)
    nuisance = rng.normal(0.0, strength_sd, size=n)
    labels = _draw_labels(strength, rng)
    noise = rng.normal(size=(n, 2))
    reliable = np.broadcast_to(np.array([True, False]), (n, 2))
    lp = _log_probs(_judge_log_odds(strength, nuisance, reliable, noise, params))
    chosen = np.take_along_axis(lp, labels[:, None, None].repeat(2, axis=1), axis=2)[:, :, 0]
    return float(chosen[:, 0].mean()), float(chosen[:, 1].mean())


def simulate_prompt_judge(
    n_items: int = 2000,
    n_prompts: int = 20,
    n_clusters: int = 4,
    *,
    dim: int = 16,
    spread: float = 0.15,
    strength_sd: float = 2.0,
    reliable_noise: float = 0.5,
    nuisance_slope: float = 2.5,
    unreliable_noise: float = 0.5,
    random_state: int | None = 0,
) -> SimulatedPrompts:
    """Draw a pairwise judge of the kind in the module docstring.

    Parameters
    ----------
    n_items, n_prompts, n_clusters : int
    dim : int
        Embedding dimension.
    spread : float
        Standard deviation of each embedding coordinate around its centroid
        (before normalising); small values give well-separated clusters.
    strength_sd : float
        Spread of the human preference strength and of the nuisance.
    reliable_noise, nuisance_slope, unreliable_noise : float
        The prompts' log-odds (module docstring).
    random_state : int or None
    """
    if n_items < 1 or n_prompts < 1 or n_clusters < 1:
        raise InputError("n_items, n_prompts and n_clusters must be >= 1")
    params = (reliable_noise, nuisance_slope, unreliable_noise)
    rng = np.random.default_rng(random_state)
    centroids = rng.normal(size=(n_clusters, dim))
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    cluster = rng.integers(n_clusters, size=n_items)
    embeddings = centroids[cluster] + spread * rng.normal(size=(n_items, dim))
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    strength = rng.normal(0.0, strength_sd, size=n_items)
    nuisance = rng.normal(0.0, strength_sd, size=n_items)
    labels = _draw_labels(strength, rng)

    reliable = np.zeros((n_clusters, n_prompts), dtype=bool)
    reliable[np.arange(n_prompts) % n_clusters, np.arange(n_prompts)] = True
    noise = rng.normal(size=(n_items, n_prompts))
    log_odds = _judge_log_odds(strength, nuisance, reliable[cluster], noise, params)

    good, bad = _expected_log_lik(strength_sd, params)
    expected = np.where(reliable, good, bad)
    planted = np.exp(expected - expected.max(axis=1, keepdims=True))
    planted /= planted.sum(axis=1, keepdims=True)
    return SimulatedPrompts(
        log_probs=_log_probs(log_odds),
        labels=labels,
        embeddings=embeddings,
        cluster=cluster.astype(np.intp),
        centroids=centroids,
        reliable=reliable,
        expected_log_lik=expected,
        planted_weights=planted,
    )


def simulated_records(
    simulation: SimulatedPrompts,
    *,
    labeled_fraction: float = 0.8,
    judge: str = "simulated-judge",
    random_state: int | None = 0,
) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    """The simulation as ``judgecp.record/1`` pair records plus an embedding table.

    One record per (item, prompt): ``meta.item`` ties an item's prompts
    together. Odd-numbered prompts show the candidates in flipped order with
    the glyphs "I"/"II" (``meta.answer_key`` re-keys them), even-numbered ones
    the original order with "A"/"B"; a ``1 - labeled_fraction`` share of the
    items have ``label: null``.
    """
    rng = np.random.default_rng(random_state)
    n_items, n_prompts, _ = simulation.log_probs.shape
    draws: FloatArray = rng.random((n_items,))
    labeled = [bool(x) for x in draws < labeled_fraction]
    canonical = CLASSES
    records: list[dict[str, Any]] = []
    for j in range(n_items):
        item = f"item-{j:05d}"
        label = canonical[int(simulation.labels[j])] if labeled[j] else None
        for a in range(n_prompts):
            flipped = a % 2 == 1
            glyphs = ("I", "II") if flipped else ("A", "B")
            shown = ("B", "A") if flipped else canonical
            answer_key = dict(zip(glyphs, shown, strict=True))
            lp = {g: float(simulation.log_probs[j, a, canonical.index(answer_key[g])]) for g in glyphs}
            records.append(
                {
                    "schema": "judgecp.record/1",
                    "shape": "pair",
                    "id": f"{item}/p{a:02d}",
                    "judge": judge,
                    "prompt": f"p{a:02d}",
                    "task": "simulated_preference",
                    "group": f"cluster-{int(simulation.cluster[j])}",
                    "label": label,
                    "logprobs": lp,
                    "prediction": max(lp, key=lambda g: lp[g]),
                    "flags": [],
                    "meta": {"item": item, "answer_key": answer_key},
                }
            )
    embeddings = {f"item-{j:05d}": simulation.embeddings[j].tolist() for j in range(n_items)}
    return records, embeddings
