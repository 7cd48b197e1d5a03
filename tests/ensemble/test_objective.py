"""Eq. (11): brute force, the bound's direction and tightness, gradient, and the fit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from judgecp.base.errors import InputError
from judgecp.stats.ensemble.objective import (
    closed_form_weights,
    fit_weights,
    lower_bound,
    objective,
    objective_and_gradient,
)


def tiny_case(seed: int, items: int = 3, prompts: int = 3, clusters: int = 2):
    rng = np.random.default_rng(seed)
    log_lik = np.log(rng.uniform(0.05, 0.95, size=(items, prompts)))  # log p(y_j|x_j,a)
    membership = rng.dirichlet(np.ones(clusters), size=items)  # p(z|x_j)
    weights = rng.dirichlet(np.ones(prompts), size=clusters)  # q(a|z)
    return log_lik, membership, weights


def brute_force_bound(log_lik, membership, weights):
    """E_{z~p(z|x), a~q(a|z)}[log p(y|x,a) + log p(a|z)/q(a|z)], p(a|z) = 1/A, by enumeration."""
    items, prompts = log_lik.shape
    out = np.zeros(items)
    for j in range(items):
        for z, a in itertools.product(range(membership.shape[1]), range(prompts)):
            prob = membership[j, z] * weights[z, a]
            out[j] += prob * (log_lik[j, a] + np.log(1 / prompts) - np.log(weights[z, a]))
    return out


def brute_force_eq11(log_lik, membership, weights):
    """Eq. (11) written out term by term."""
    total = 0.0
    for j in range(log_lik.shape[0]):
        for z in range(membership.shape[1]):
            inner = sum(weights[z, a] * log_lik[j, a] for a in range(log_lik.shape[1]))
            inner -= sum(weights[z, a] * np.log(weights[z, a]) for a in range(log_lik.shape[1]))
            total += membership[j, z] * inner
    return total


def exact_log_lik(log_lik, membership):
    """log p(y|x) = log sum_z p(z|x) sum_a (1/A) p(y|x,a) under the uniform prior."""
    return logsumexp(log_lik, axis=1) - np.log(log_lik.shape[1])


@pytest.mark.parametrize("seed", range(5))
def test_objective_matches_brute_force(seed):
    log_lik, membership, weights = tiny_case(seed)
    assert objective(weights, log_lik, membership) == pytest.approx(
        brute_force_eq11(log_lik, membership, weights), abs=1e-12
    )
    bound = lower_bound(weights, log_lik, membership)
    np.testing.assert_allclose(bound, brute_force_bound(log_lik, membership, weights), atol=1e-12)
    # eq. (11) drops only the constant -log A per item
    assert bound.sum() == pytest.approx(
        objective(weights, log_lik, membership) - 3 * np.log(3), abs=1e-12
    )


def test_bound_never_exceeds_the_log_likelihood():
    worst_gap = np.inf
    for seed in range(200):
        log_lik, membership, weights = tiny_case(seed, items=4, prompts=4, clusters=3)
        gap = exact_log_lik(log_lik, membership) - lower_bound(weights, log_lik, membership)
        worst_gap = min(worst_gap, gap.min())
    assert worst_gap >= -1e-12


def test_bound_is_tight_at_the_posterior_and_the_entropy_sign_matters():
    log_lik, membership, _ = tiny_case(7, items=1, prompts=4, clusters=2)
    posterior = softmax(log_lik[0])  # q(a|z) ∝ p(a|z) p(y|x,a), the same for every z
    weights = np.tile(posterior, (2, 1))
    exact = exact_log_lik(log_lik, membership)[0]
    assert lower_bound(weights, log_lik, membership)[0] == pytest.approx(exact, abs=1e-12)
    # Negative control: with the entropy term's sign flipped the "bound" is no
    # longer tight at the posterior (it drops by twice the entropy).
    entropy = -(posterior * np.log(posterior)).sum()
    flipped = (weights @ log_lik[0]) @ membership[0] + (posterior * np.log(posterior)).sum() - np.log(4)
    assert exact - flipped == pytest.approx(2 * entropy, abs=1e-12)
    assert exact - flipped > 0.5


@pytest.mark.parametrize("seed", range(4))
def test_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    log_lik, membership, _ = tiny_case(seed, items=6, prompts=4, clusters=3)
    logits = rng.normal(size=(3, 4))
    _, grad = objective_and_gradient(logits, log_lik, membership)
    step = 1e-6
    numeric = np.zeros_like(logits)
    for index in np.ndindex(*logits.shape):
        up, down = logits.copy(), logits.copy()
        up[index] += step
        down[index] -= step
        numeric[index] = (
            objective_and_gradient(up, log_lik, membership)[0]
            - objective_and_gradient(down, log_lik, membership)[0]
        ) / (2 * step)
    np.testing.assert_allclose(grad, numeric, atol=1e-7)
    value, _ = objective_and_gradient(logits, log_lik, membership)
    assert value == pytest.approx(objective(softmax(logits, axis=1), log_lik, membership), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_lbfgs_reaches_the_closed_form_maximiser(seed):
    rng = np.random.default_rng(seed)
    items, prompts, clusters = 40, 6, 5
    log_lik = np.log(rng.uniform(0.02, 0.98, size=(items, prompts)))
    hard = np.eye(clusters)[rng.integers(clusters - 1, size=items)]  # last cluster empty
    soft = rng.dirichlet(np.ones(clusters) * 0.5, size=items)
    for membership in (hard, soft):
        fit = fit_weights(log_lik, membership)
        assert fit.converged, fit.message
        exact = closed_form_weights(log_lik, membership)
        np.testing.assert_allclose(fit.weights, exact, atol=1e-5)
        assert fit.objective == pytest.approx(objective(exact, log_lik, membership), abs=1e-8)
    np.testing.assert_allclose(fit_weights(log_lik, hard).weights[-1], np.full(prompts, 1 / prompts))


def test_closed_form_beats_every_other_point_of_the_simplex():
    rng = np.random.default_rng(3)
    log_lik, membership, _ = tiny_case(3, items=10, prompts=5, clusters=2)
    best = objective(closed_form_weights(log_lik, membership), log_lik, membership)
    others = [objective(rng.dirichlet(np.ones(5), size=2), log_lik, membership) for _ in range(2000)]
    assert best > max(others)


def test_bad_inputs_name_the_problem():
    with pytest.raises(InputError, match="finite"):
        fit_weights(np.array([[0.0, -np.inf]]), np.ones((1, 1)))
    with pytest.raises(InputError, match="probability vector"):
        fit_weights(np.zeros((2, 2)), np.full((2, 2), 0.7))
    with pytest.raises(InputError, match="solver"):
        fit_weights(np.zeros((2, 2)), np.ones((2, 1)), solver="adam")  # type: ignore[arg-type]
