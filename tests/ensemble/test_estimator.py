"""Prompt ensembles on the simulated judge: who wins, and whether the planted weights come back."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from judgecp.base.errors import InputError
from judgecp.stats.ensemble.estimator import PromptEnsemble, uniform_proba
from judgecp.stats.ensemble.metrics import expected_calibration_error, negative_log_likelihood
from judgecp.synthetic.judges import simulate_prompt_judge


def fit_three(sim, n_val, seed, embeddings=None):
    embeddings = sim.embeddings if embeddings is None else embeddings
    val, test = np.arange(n_val), np.arange(n_val, sim.labels.size)
    bpe = PromptEnsemble(1).fit(sim.log_probs[val], sim.labels[val])
    mixture = PromptEnsemble(4, random_state=seed).fit(
        sim.log_probs[val], sim.labels[val], embeddings[val], clustering_embeddings=embeddings
    )
    probas = {
        "uniform": uniform_proba(sim.log_probs[test]),
        "bpe": bpe.predict_proba(sim.log_probs[test]),
        "mixture": mixture.predict_proba(sim.log_probs[test], embeddings[test]),
    }
    y = sim.labels[test]
    return (
        {m: expected_calibration_error(p, y) for m, p in probas.items()},
        {m: negative_log_likelihood(p, y) for m, p in probas.items()},
        mixture,
    )


def matched_weights(mixture, sim):
    """The mixture's weights reordered to the true clusters (Hungarian on centroid similarity)."""
    rows, cols = linear_sum_assignment(-(mixture.clustering_.centroids_ @ sim.centroids.T))
    out = np.empty_like(mixture.weights_)
    out[cols] = mixture.weights_[rows]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_mixture_beats_bpe_and_uniform_on_ece_and_nll(seed):
    # 200 validation items (about 50 per cluster), 2,800 test items.
    sim = simulate_prompt_judge(3000, 20, 4, random_state=seed)
    ece, nll, _ = fit_three(sim, 200, seed)
    # Margins: over seeds 0-9 the mixture's ECE stayed below .038 and the
    # others' above .24; its NLL below .59 and the others' above .79.
    assert ece["mixture"] < min(ece["bpe"], ece["uniform"]) - 0.1
    assert nll["mixture"] < min(nll["bpe"], nll["uniform"]) - 0.1


def test_uninformative_embeddings_take_the_mixtures_advantage_away():
    # Negative control: embeddings shuffled across items carry no cluster
    # information, and the mixture falls back to BPE-like performance.
    sim = simulate_prompt_judge(3000, 20, 4, random_state=0)
    shuffled = sim.embeddings[np.random.default_rng(1).permutation(sim.labels.size)]
    ece, nll, _ = fit_three(sim, 200, 0, embeddings=shuffled)
    assert ece["mixture"] > 0.15 and abs(nll["mixture"] - nll["bpe"]) < 0.05


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_mixture_recovers_the_planted_weights(seed):
    sim = simulate_prompt_judge(3000, 12, 4, random_state=seed)
    _, _, mixture = fit_three(sim, 2000, seed)
    weights = matched_weights(mixture, sim)
    # Planted: .215 on each of the 3 reliable prompts of a cluster, .039 on the
    # others. With 500 validation items per cluster the largest error over
    # seeds 0-7 was .020; tolerance .04.
    assert np.abs(weights - sim.planted_weights).max() < 0.04
    for z in range(4):
        assert set(np.argsort(-weights[z])[:3]) == set(np.flatnonzero(sim.reliable[z]))


def test_more_validation_data_estimates_the_weights_better():
    errors = {}
    for n_val in (100, 2000):
        per_seed = []
        for seed in range(3):
            sim = simulate_prompt_judge(3000, 12, 4, random_state=seed)
            _, _, mixture = fit_three(sim, n_val, seed)
            per_seed.append(np.abs(matched_weights(mixture, sim) - sim.planted_weights).mean())
        errors[n_val] = np.mean(per_seed)
    assert errors[2000] < errors[100] / 2


def test_one_cluster_is_bpe_and_prediction_is_the_stated_mixture():
    sim = simulate_prompt_judge(400, 5, 2, random_state=3)
    bpe = PromptEnsemble(1).fit(sim.log_probs[:100], sim.labels[:100])
    assert bpe.weights_.shape == (1, 5) and bpe.clustering_ is None
    np.testing.assert_allclose(
        bpe.predict_proba(sim.log_probs[100:]),
        np.einsum("a,nac->nc", bpe.weights_[0], np.exp(sim.log_probs[100:])),
    )
    soft = PromptEnsemble(2, membership="soft", concentration=3.0, random_state=0).fit(
        sim.log_probs[:100], sim.labels[:100], sim.embeddings[:100]
    )
    resp = soft.clustering_.membership(sim.embeddings[100:], "soft", 3.0)
    by_hand = np.einsum("nz,za,nac->nc", resp, soft.weights_, np.exp(sim.log_probs[100:]))
    np.testing.assert_allclose(soft.predict_proba(sim.log_probs[100:], sim.embeddings[100:]), by_hand)
    np.testing.assert_allclose(soft.predict_proba(sim.log_probs, sim.embeddings).sum(axis=1), 1.0)


def test_uniform_is_the_plain_average():
    sim = simulate_prompt_judge(50, 3, 1, random_state=0)
    np.testing.assert_allclose(uniform_proba(sim.log_probs), np.exp(sim.log_probs).mean(axis=1))


def test_errors_name_the_problem():
    sim = simulate_prompt_judge(60, 3, 2, random_state=0)
    with pytest.raises(InputError, match="needs item embeddings"):
        PromptEnsemble(2).fit(sim.log_probs, sim.labels)
    with pytest.raises(InputError, match="class indices"):
        PromptEnsemble(1).fit(sim.log_probs, sim.labels + 5)
    with pytest.raises(InputError, match="normalised"):
        PromptEnsemble(1).fit(sim.log_probs + 1.0, sim.labels)
    with pytest.raises(InputError, match="membership"):
        PromptEnsemble(2, membership="fuzzy").fit(sim.log_probs, sim.labels, sim.embeddings)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="not fitted"):
        PromptEnsemble(1).predict_proba(sim.log_probs)
