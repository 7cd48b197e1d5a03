"""Synthetic judges with known behaviour, for tests, benchmarks and the example runs.

One module for every kind: a Likert judge that ranks better than it scores,
a position-biased pairwise judge, a multiple-choice model, PARC-style
prompt variations, and a pairwise judge whose prompts are reliable only on
some clusters of images (:func:`simulate_prompt_judge`, for the prompt
ensembles of :mod:`judgecp.kinds.ensemble`). Rows are exchangeable, so every
conformal guarantee applies exactly. Nothing here is a real model's output:
the example reports say so.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, log_expit

from judgecp.base.errors import InputError
from judgecp.base.records import choice_record
from judgecp.base.scale import LikertScale
from judgecp.data import PairData, ScoreData

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


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
) -> ScoreData:
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
    human = np.clip(
        np.round(centre + spread * (z + rng.normal(scale=human_noise, size=n))), scale.minimum, scale.maximum
    )
    noise = np.asarray([s for _, s in groups])[g]
    perceived = centre + spread * (compression * z + judge_bias + rng.normal(size=n) * noise)
    labels = scale.labels.astype(np.float64)
    logits = -((labels[None, :] - perceived[:, None]) ** 2) / (2 * temperature**2)
    logprobs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    data = ScoreData.from_arrays(
        logprobs,
        human,
        scale=scale,
        ids=[f"item{i:05d}" for i in range(n)],
        fields={"group": np.asarray([groups[i][0] for i in g])},
    )
    data.source = f"example: synthetic judge (simulate_likert_judge, n={n}, seed={seed}); not a real model"
    return data


def simulate_mcq_records(
    n: int = 2000,
    *,
    seed: int = 0,
    option_counts: Sequence[int] = (2, 3, 4, 5),
    n_correct: int = 1,
    skill: float = 1.5,
    temperature: float = 1.0,
    datasets: Sequence[str] = ("sqa", "ai2d"),
) -> list[dict[str, Any]]:
    """Multiple-choice records from a model that knows the answer with some skill.

    Options are letters ``A..``; ``n_correct`` of them are correct. The
    model's logit is ``skill`` + noise for correct options and noise for the
    others; logprobs are its softmax at ``temperature``; its prediction is
    the argmax. Items are exchangeable.
    """
    rng = np.random.default_rng(seed)
    letters = "ABCDEFGHIJ"
    out: list[dict[str, Any]] = []
    for i in range(n):
        k = int(rng.choice(option_counts))
        opts = list(letters[:k])
        correct = sorted(rng.choice(k, size=min(n_correct, k), replace=False).tolist())
        z = rng.normal(size=k) + skill * np.isin(np.arange(k), correct)
        lp = z / temperature - np.logaddexp.reduce(z / temperature)
        out.append(choice_record(
            f"q{i:05d}",
            options=opts,
            label=[opts[c] for c in correct],
            logprobs={o: float(v) for o, v in zip(opts, lp, strict=True)},
            prediction=opts[int(np.argmax(lp))],
            task=datasets[i % len(datasets)],
            group=f"cat{rng.integers(3)}",
        ))
    return out


def simulate_parc_records(
    n_sources: int = 600,
    *,
    seed: int = 0,
    option_counts: Sequence[int] = (2,),
    skill: float = 2.0,
    negation_blindness: float = 0.4,
    models: Sequence[str] = ("model",),
    dataset: str = "comparative",
) -> list[dict[str, Any]]:
    """PARC-style records: an original prompt and four variations per source item.

    ``O`` (original), ``LR-I`` (instruction reformulation, same answer, a
    little harder), ``VR-B`` (blurred image, same answer, harder), ``LS-N``
    (negation: every originally wrong option becomes correct) and, for
    two-option comparative items, ``VS-S`` (images swapped: the answer
    flips). With probability ``negation_blindness`` the model ignores a
    negation and answers as for the original prompt.
    """
    rng = np.random.default_rng(seed)
    letters = "ABCDEFGHIJ"
    out: list[dict[str, Any]] = []

    def record(model: str, sid: str, var: str, opts: list[str], correct: list[int], logits: np.ndarray) -> None:
        lp = logits - np.logaddexp.reduce(logits)
        out.append(choice_record(
            f"{model}/{sid}/{var}", source_id=sid, variation=var, task=dataset, judge=model, options=opts,
            label=[opts[c] for c in correct], logprobs={o: float(v) for o, v in zip(opts, lp, strict=True)},
            prediction=opts[int(np.argmax(lp))],
        ))

    for model in models:
        for s in range(n_sources):
            sid = f"s{s:05d}"
            k = int(rng.choice(option_counts))
            opts = list(letters[:k])
            c = int(rng.integers(k))
            onehot = np.eye(k)[c]
            base = rng.normal(size=k) + skill * onehot
            record(model, sid, "O", opts, [c], base)
            record(model, sid, "LR-I", opts, [c], base + rng.normal(scale=0.7, size=k))
            record(model, sid, "VR-B", opts, [c], 0.7 * base + rng.normal(scale=0.7, size=k))
            others = [j for j in range(k) if j != c]
            if rng.random() < negation_blindness:
                neg = base + rng.normal(scale=0.3, size=k)
            else:
                neg = rng.normal(size=k) + skill * (1 - onehot)
            record(model, sid, "LS-N", opts, others, neg)
            if k == 2:
                record(model, sid, "VS-S", opts, [1 - c], base[::-1] + rng.normal(scale=0.5, size=k))
    return out


def simulate_pairwise_judge(
    n: int = 2000,
    *,
    seed: int = 0,
    position_bias: float = 1.5,
    skill: float = 4.0,
    noise: float = 1.5,
    human_noise: float = 0.5,
) -> PairData:
    """A position-biased judge on exchangeable pairs (for tests, benchmarks and examples).

    Each pair has a latent quality difference ``d ~ N(0, 1)``; humans prefer
    the original A iff ``d + human noise > 0``. The judge's logit for
    "original A is better" is ``skill * d + noise`` plus ``position_bias``
    toward whichever response it sees first: forward
    ``P(A) = sigmoid(s + b)``, reversed ``P(original A) = sigmoid(s - b)``.
    Averaging the orders cancels most of the bias; a single order does not.
    """
    rng = np.random.default_rng(seed)
    d = rng.normal(size=n)
    labels = (d + rng.normal(scale=human_noise, size=n) > 0).astype(np.int64)
    s = skill * d + rng.normal(scale=noise, size=n)
    p_fwd = 1 / (1 + np.exp(-(s + position_bias)))
    p_rev = 1 / (1 + np.exp(-(s - position_bias)))
    data = PairData.from_arrays(p_fwd, p_rev, labels, pair_ids=[f"pair{i:05d}" for i in range(n)])
    data.n_read = n
    data.source = f"synthetic position-biased judge (simulate_pairwise_judge, n={n}, seed={seed})"
    return data


# -- a prompt-ensemble judge (judgecp.kinds.ensemble) ----------------------------------------

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
        The prompts' log-odds (above).
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
