"""Prompt ensembles: uniform averaging, Bayesian prompt ensemble, multimodal mixture.

All three predict by linear pooling of the judge's per-prompt answer
distributions p(y|x,a) (``log_probs``: items x prompts x classes, each
prompt's row normalised over the answer classes):

* uniform averaging: ``p(y|x) = (1/A) sum_a p(y|x,a)``;
* Bayesian prompt ensemble (BPE): one cluster, weights w_a fitted by eq. (11)
  on the labeled validation items: ``p(y|x) = sum_a w_a p(y|x,a)``;
* multimodal mixture of BPEs: K clusters of the item embeddings (spherical
  k-means), per-cluster weights w_za fitted by eq. (11), and
  ``p(y|x) = sum_z p(z|x) sum_a w_za p(y|x,a)``.

:class:`PromptEnsemble` is all of them: ``n_clusters=1`` is the BPE, and
:func:`uniform_proba` is the baseline without fitting.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.stats.ensemble.clustering import SAMPLES_PER_CLUSTER, Membership, SphericalKMeans
from judgecp.stats.ensemble.objective import LBFGS_HISTORY, LBFGS_MAX_ITER, Solver, fit_weights

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


def check_log_probs(log_probs: FloatArray) -> FloatArray:
    """Validate an (items x prompts x classes) array of normalised log-probabilities."""
    lp = np.asarray(log_probs, dtype=float)
    if lp.ndim != 3 or lp.shape[1] < 1 or lp.shape[2] < 2:
        raise InputError(
            f"log_probs must be (items x prompts x classes) with >= 2 classes, got shape {lp.shape}"
        )
    if not np.isfinite(lp).all():
        raise InputError("log_probs must be finite (floor zero probabilities when reading)")
    total = np.exp(lp).sum(axis=2)
    if not np.allclose(total, 1.0, atol=1e-6):
        raise InputError("each prompt's log_probs must be normalised over the answer classes")
    return lp


def uniform_proba(log_probs: FloatArray) -> FloatArray:
    """Uniform averaging of the prompts' answer distributions (items x classes)."""
    out: FloatArray = np.exp(check_log_probs(log_probs)).mean(axis=1)
    return out


def label_log_lik(log_probs: FloatArray, labels: IntArray) -> FloatArray:
    """log p(y_j | x_j, a) for every item j and prompt a (items x prompts)."""
    lp = check_log_probs(log_probs)
    y = np.asarray(labels)
    if y.shape != (lp.shape[0],) or (y < 0).any() or (y >= lp.shape[2]).any():
        raise InputError(f"labels must be {lp.shape[0]} class indices in 0..{lp.shape[2] - 1}")
    out: FloatArray = lp[np.arange(lp.shape[0]), :, y]
    return out


@dataclass(eq=False)
class PromptEnsemble:
    """Per-cluster prompt weights fitted by eq. (11); one cluster is the plain BPE.

    Parameters
    ----------
    n_clusters : int
        K (1: Bayesian prompt ensemble, no embeddings needed).
    membership : {"hard", "soft"}
        p(z|x): k-means assignment, or a softmax of ``concentration`` times the
        cosine similarity to the centroids.
    concentration : float
        Sharpness of the soft membership.
    samples_per_cluster, n_init, max_iter : int
        Spherical k-means settings (Table 5: 256 x K samples, 3 inits, 1,000
        iterations).
    solver : {"lbfgs", "closed-form"}
        How eq. (11) is maximised: L-BFGS as in Table 5, or its exact
        closed-form maximiser (same optimum, faster; see
        :func:`~judgecp.stats.ensemble.objective.fit_weights`).
    lbfgs_history, lbfgs_max_iter : int
        L-BFGS settings (Table 5: 50, 100).
    random_state : int or None
        The cluster seed (clustering sample and initialisations).
    clustering : SphericalKMeans, optional
        An already fitted clustering to use as is (the k-means settings above
        are then ignored): lets several fits share one clustering.

    Attributes
    ----------
    weights_ : ndarray of shape (n_clusters, n_prompts)
        w_za; rows on the simplex. Clusters without validation mass keep the
        uniform prior.
    clustering_ : SphericalKMeans or None
    validation_mass_ : ndarray of shape (n_clusters,)
        N_z = sum_j p(z|x_j) over the validation items.
    objective_ : float
    n_iter_ : int
    converged_ : bool
    """

    n_clusters: int = 1
    _: KW_ONLY
    membership: Membership = "hard"
    concentration: float = 20.0
    samples_per_cluster: int | None = SAMPLES_PER_CLUSTER
    n_init: int = 3
    max_iter: int = 1000
    solver: Solver = "lbfgs"
    lbfgs_history: int = LBFGS_HISTORY
    lbfgs_max_iter: int = LBFGS_MAX_ITER
    random_state: int | None = None
    clustering: SphericalKMeans | None = None

    def fit(
        self,
        log_probs: FloatArray,
        labels: IntArray,
        embeddings: FloatArray | None = None,
        *,
        clustering_embeddings: FloatArray | None = None,
    ) -> PromptEnsemble:
        """Cluster, then fit the weights on the labeled validation items; returns self.

        Parameters
        ----------
        log_probs : ndarray of shape (n_items, n_prompts, n_classes)
            Validation items' per-prompt log-probabilities.
        labels : ndarray of shape (n_items,)
            Their class indices.
        embeddings : ndarray of shape (n_items, dim), optional
            Their embeddings (needed when ``n_clusters > 1``).
        clustering_embeddings : ndarray, optional
            The pool the clusters are fitted on (D_sup: typically every item,
            labeled or not); defaults to ``embeddings``.
        """
        if self.membership not in ("hard", "soft"):
            raise InputError(f"membership must be 'hard' or 'soft', got {self.membership!r}")
        log_lik = label_log_lik(log_probs, labels)
        if self.n_clusters == 1:
            self.clustering_ = None
            resp = np.ones((log_lik.shape[0], 1))
        else:
            if embeddings is None:
                raise InputError(f"n_clusters={self.n_clusters} needs item embeddings")
            emb = np.asarray(embeddings, dtype=float)
            if emb.shape[0] != log_lik.shape[0]:
                raise InputError(
                    f"{emb.shape[0]} embeddings for {log_lik.shape[0]} validation items"
                )
            if self.clustering is not None:
                if not hasattr(self.clustering, "centroids_"):
                    raise InputError("the clustering passed to PromptEnsemble is not fitted")
                if self.clustering.centroids_.shape[0] != self.n_clusters:
                    raise InputError(
                        f"the clustering has {self.clustering.centroids_.shape[0]} clusters, "
                        f"n_clusters is {self.n_clusters}"
                    )
                self.clustering_ = self.clustering
            else:
                pool = emb if clustering_embeddings is None else clustering_embeddings
                self.clustering_ = SphericalKMeans(
                    self.n_clusters,
                    samples_per_cluster=self.samples_per_cluster,
                    n_init=self.n_init,
                    max_iter=self.max_iter,
                    random_state=self.random_state,
                ).fit(pool)
            resp = self.clustering_.membership(emb, self.membership, self.concentration)
        fit = fit_weights(
            log_lik, resp, solver=self.solver, history=self.lbfgs_history,
            max_iter=self.lbfgs_max_iter,
        )
        self.weights_ = fit.weights
        self.objective_ = fit.objective
        self.n_iter_ = fit.n_iter
        self.converged_ = fit.converged
        self.validation_mass_ = resp.sum(axis=0)
        self.n_prompts_ = log_lik.shape[1]
        return self

    def cluster_membership(self, embeddings: FloatArray | None, n_items: int) -> FloatArray:
        """p(z|x) for ``n_items`` items (all ones for a single cluster)."""
        if not hasattr(self, "weights_"):
            raise RuntimeError("PromptEnsemble is not fitted: call fit first")
        if self.clustering_ is None:
            return np.ones((n_items, 1))
        if embeddings is None:
            raise InputError(f"n_clusters={self.n_clusters} needs item embeddings to predict")
        resp = self.clustering_.membership(embeddings, self.membership, self.concentration)
        if resp.shape[0] != n_items:
            raise InputError(f"{resp.shape[0]} embeddings for {n_items} items")
        return resp

    def prompt_weights(self, embeddings: FloatArray | None, n_items: int) -> FloatArray:
        """Effective weight of each prompt for each item, ``sum_z p(z|x) w_za``."""
        out: FloatArray = self.cluster_membership(embeddings, n_items) @ self.weights_
        return out

    def predict_proba(
        self, log_probs: FloatArray, embeddings: FloatArray | None = None
    ) -> FloatArray:
        """``p(y|x) = sum_z p(z|x) sum_a w_za p(y|x,a)`` (items x classes)."""
        lp = check_log_probs(log_probs)
        if lp.shape[1] != getattr(self, "n_prompts_", lp.shape[1]):
            raise InputError(f"fitted on {self.n_prompts_} prompts, got {lp.shape[1]}")
        weights = self.prompt_weights(embeddings, lp.shape[0])
        out: FloatArray = np.einsum("na,nac->nc", weights, np.exp(lp))
        return out
