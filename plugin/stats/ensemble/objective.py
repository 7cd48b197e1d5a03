r"""The lower bound of eq. (11) and its L-BFGS fit (prompt weights per cluster).

Model (supplement, section C): an item x belongs to cluster z with p(z|x);
cluster z picks prompt a with p(a|z); the judge answers y under prompt a with
p(y|x,a). So ``p(y|x) = sum_z p(z|x) sum_a p(a|z) p(y|x,a)``. With a
variational q(a|z) = w_za and Jensen's inequality over (z, a):

    log p(y|x) >= sum_z p(z|x) [ sum_a w_za log p(y|x,a) - KL(w_z || p(a|z)) ].

With the uniform prior p(a|z) = 1/A, ``KL(w_z || p) = sum_a w_za log w_za + log A``,
so the bound of one item is

    B(x, y) = sum_z p(z|x) [ sum_a w_za log p(y|x,a) - sum_a w_za log w_za ] - log A.

Eq. (11) maximises the sum of B over the M validation items, without the
constant ``- M log A``:

    J(w) = sum_j sum_z p(z|x_j) [ sum_a w_za l_ja - sum_a w_za log w_za ],
    l_ja = log p(y*_j | x_j, a).

The entropy term ``- sum_a w_za log w_za`` enters with a **plus** sign on the
entropy H(w_z) (it comes from ``-KL``): the bound rewards spread-out weights;
with the sign flipped the "bound" could exceed log p(y|x) (a test shows it).

Writing ``S_za = sum_j p(z|x_j) l_ja`` and ``N_z = sum_j p(z|x_j)``,
``J(w) = sum_z [ sum_a w_za S_za + N_z H(w_z) ]``. We parameterise
``w_z = softmax(theta_z)`` (one row of logits per cluster) and maximise with
L-BFGS (scipy's L-BFGS-B, whose line search satisfies the strong Wolfe
conditions; history 50 and at most 100 iterations as in Table 5). The
gradient:

    dJ/dw_za     = S_za - N_z (log w_za + 1) =: G_za,
    dJ/dtheta_zb = w_zb (G_zb - sum_a w_za G_za).

J is strictly concave in w_z when N_z > 0, so the optimum is unique; it is
``w_z = softmax_a(S_za / N_z)`` (stationarity on the simplex): the weights
are a softmax of each prompt's *mean* validation log-likelihood in the
cluster, so they do not sharpen as validation data grow (the KL term is
counted once per item). The tests use this closed form as an independent
check of the L-BFGS fit, and ``solver="closed-form"`` offers it for long
sweeps. A cluster with no validation mass (N_z = 0) has zero gradient and
keeps its starting point, the uniform prior.
Table 5's "lr 0.01" is the initial step of PyTorch's L-BFGS; scipy chooses its
own first step, which changes the path, not the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import log_softmax, logsumexp
from threadpoolctl import threadpool_limits

from judgecp.base.errors import InputError

FloatArray = NDArray[np.float64]
Solver = Literal["lbfgs", "closed-form"]

#: L-BFGS settings of Table 5 (history size, maximum iterations).
LBFGS_HISTORY = 50
LBFGS_MAX_ITER = 100


def _check(log_lik: FloatArray, membership: FloatArray) -> tuple[FloatArray, FloatArray]:
    log_lik = np.asarray(log_lik, dtype=float)
    membership = np.asarray(membership, dtype=float)
    if log_lik.ndim != 2 or membership.ndim != 2 or log_lik.shape[0] != membership.shape[0]:
        raise InputError(
            f"log_lik must be (items x prompts) and membership (items x clusters) with the same "
            f"items; got {log_lik.shape} and {membership.shape}"
        )
    if not np.isfinite(log_lik).all():
        raise InputError("log p(y|x,a) must be finite (floor zero probabilities before fitting)")
    if (membership < 0).any() or not np.allclose(membership.sum(axis=1), 1.0):
        raise InputError("each row of the membership p(z|x) must be a probability vector")
    return log_lik, membership


def objective(weights: FloatArray, log_lik: FloatArray, membership: FloatArray) -> float:
    """J(w) of eq. (11): the validation lower bound without its constant ``- M log A``.

    Parameters
    ----------
    weights : ndarray of shape (n_clusters, n_prompts)
        w_za = q(a|z), each row on the simplex (zeros allowed: 0 log 0 = 0).
    log_lik : ndarray of shape (n_items, n_prompts)
        l_ja = log p(y*_j | x_j, a).
    membership : ndarray of shape (n_items, n_clusters)
        p(z | x_j).
    """
    log_lik, membership = _check(log_lik, membership)
    w = np.asarray(weights, dtype=float)
    w_log_w = np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)
    per_cluster = log_lik @ w.T - w_log_w.sum(axis=1)[None, :]  # (items, clusters)
    return float((membership * per_cluster).sum())


def lower_bound(weights: FloatArray, log_lik: FloatArray, membership: FloatArray) -> FloatArray:
    """Per-item lower bound B(x_j, y_j) on log p(y_j | x_j) (eq. (11)'s terms minus log A)."""
    log_lik, membership = _check(log_lik, membership)
    w = np.asarray(weights, dtype=float)
    w_log_w = np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)
    per_cluster = log_lik @ w.T - w_log_w.sum(axis=1)[None, :]
    out: FloatArray = (membership * per_cluster).sum(axis=1) - np.log(log_lik.shape[1])
    return out


def objective_and_gradient(
    logits: FloatArray, log_lik: FloatArray, membership: FloatArray
) -> tuple[float, FloatArray]:
    """J(softmax(logits)) and its gradient with respect to the logits (both unscaled)."""
    log_w = log_softmax(logits, axis=1)
    w = np.exp(log_w)
    s = membership.T @ log_lik  # (clusters, prompts)
    n = membership.sum(axis=0)  # (clusters,)
    entropy = -(w * log_w).sum(axis=1)
    value = float((w * s).sum() + (n * entropy).sum())
    g = s - n[:, None] * log_w  # the "+1" of dJ/dw cancels under the softmax
    grad: FloatArray = w * (g - (w * g).sum(axis=1, keepdims=True))
    return value, grad


@dataclass(frozen=True)
class WeightFit:
    """Result of :func:`fit_weights`."""

    weights: FloatArray  #: (clusters, prompts), rows on the simplex
    objective: float  #: J(w) at the optimum
    n_iter: int  #: L-BFGS iterations (0 for the closed form)
    converged: bool
    message: str


def closed_form_weights(log_lik: FloatArray, membership: FloatArray) -> FloatArray:
    """The exact maximiser of eq. (11): ``w_z = softmax(S_z / N_z)``; uniform where N_z = 0."""
    log_lik, membership = _check(log_lik, membership)
    s = membership.T @ log_lik
    n = membership.sum(axis=0)
    mean = np.where(n[:, None] > 0, s / np.where(n > 0, n, 1.0)[:, None], 0.0)
    out: FloatArray = np.exp(mean - logsumexp(mean, axis=1, keepdims=True))
    return out


def fit_weights(
    log_lik: FloatArray,
    membership: FloatArray,
    *,
    solver: Solver = "lbfgs",
    history: int = LBFGS_HISTORY,
    max_iter: int = LBFGS_MAX_ITER,
) -> WeightFit:
    """Maximise eq. (11) over the per-cluster prompt weights.

    ``solver="lbfgs"`` (Table 5) starts from uniform weights (the prior) and
    runs L-BFGS on the clusters with validation mass (the others keep the
    prior, as their gradient is zero). Because J is a sum of one term per
    cluster, the optimiser maximises ``sum_z J_z(w_z) / N_z``, which has the
    same maximiser and is better conditioned when clusters hold very
    different numbers of items. ``solver="closed-form"`` returns the exact
    maximiser ``softmax(S_z / N_z)`` directly (the tests check that both
    agree); it is what long sweeps use.

    Parameters
    ----------
    log_lik : ndarray of shape (n_items, n_prompts)
        log p(y*_j | x_j, a) on the validation items.
    membership : ndarray of shape (n_items, n_clusters)
        p(z | x_j).
    solver : {"lbfgs", "closed-form"}
    history, max_iter : int
        L-BFGS history size and iteration limit (Table 5: 50 and 100).
    """
    log_lik, membership = _check(log_lik, membership)
    if log_lik.shape[0] == 0:
        raise InputError("fitting prompt weights needs at least one labeled validation item")
    if solver == "closed-form":
        weights = closed_form_weights(log_lik, membership)
        return WeightFit(weights, objective(weights, log_lik, membership), 0, True, "closed form")
    if solver != "lbfgs":
        raise InputError(f"solver must be 'lbfgs' or 'closed-form', got {solver!r}")
    mass = membership.sum(axis=0)
    active = mass > 0
    scaled = membership[:, active] / mass[active]  # column z sums to 1: J_z / N_z
    shape = (int(active.sum()), log_lik.shape[1])

    def negative(flat: FloatArray) -> tuple[float, FloatArray]:
        value, grad = objective_and_gradient(flat.reshape(shape), log_lik, scaled)
        return -value / shape[0], -grad.ravel() / shape[0]

    # One BLAS thread: L-BFGS-B's small dense algebra gains nothing from
    # threads, and on a busy machine OpenBLAS's spinning threads made each
    # iteration about 11x slower (measured in docs/ensembles.md).
    with threadpool_limits(limits=1, user_api="blas"):
        result = minimize(
            negative,
            np.zeros(shape[0] * shape[1]),
            jac=True,
            method="L-BFGS-B",
            options={"maxcor": history, "maxiter": max_iter, "ftol": 1e-13, "gtol": 1e-9},
        )
    weights = np.full((membership.shape[1], log_lik.shape[1]), 1.0 / log_lik.shape[1])
    logits = result.x.reshape(shape)
    weights[active] = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    return WeightFit(
        weights=weights,
        objective=objective(weights, log_lik, membership),
        n_iter=int(result.nit),
        converged=bool(result.success),
        message=str(result.message),
    )
