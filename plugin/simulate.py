"""Synthetic judges with known behaviour, for tests, benchmarks and the example runs.

One module for every kind: a Likert judge that ranks better than it scores,
a position-biased pairwise judge, a multiple-choice model and PARC-style
prompt variations. Rows are exchangeable, so every conformal guarantee
applies exactly. Nothing here is a real model's output: the example reports
say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgecp.data import PairData, ScoreData
from judgecp.records import choice_record
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
    human = np.clip(np.round(centre + spread * (z + rng.normal(scale=human_noise, size=n))), scale.minimum, scale.maximum)
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
