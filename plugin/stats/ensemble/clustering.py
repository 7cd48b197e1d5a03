"""Spherical k-means on item embeddings, and cluster membership p(z|x).

The supplement's Table 5 clusters the CLIP image embeddings with spherical
k-means: K clusters fitted on a sample of ``256 x K`` items (the clustering
set D_sup, drawn with the *cluster* seed), 3 random initialisations (the one
with the highest objective is kept), at most 1,000 iterations each.

Spherical k-means works on unit vectors: each item is assigned to the
centroid with the largest cosine similarity, and each centroid is the
normalised mean of its items. The objective (maximised) is the sum over items
of the cosine similarity to their centroid. A cluster that loses all its items
keeps its previous centroid (it is reported in ``empty_clusters_``).

Membership p(z|x):

* ``"hard"``: one-hot on the most similar centroid (k-means' own assignment);
* ``"soft"``: ``softmax_z(concentration * cos(x, mu_z))``, the posterior of a
  mixture of von Mises-Fisher components with equal weights and one shared
  concentration; ``concentration -> inf`` gives the hard assignment.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError

FloatArray = NDArray[np.float64]
Membership = Literal["hard", "soft"]

#: Clustering samples per cluster (Table 5: "256 x K").
SAMPLES_PER_CLUSTER = 256


def normalize_rows(embeddings: FloatArray) -> FloatArray:
    """Rows scaled to unit length; a zero or non-finite row is an error naming it."""
    x = np.asarray(embeddings, dtype=float)
    if x.ndim != 2:
        raise InputError(f"embeddings must be a 2-D array (items x dimensions), got shape {x.shape}")
    bad = ~np.isfinite(x).all(axis=1)
    if bad.any():
        raise InputError(f"embedding row {int(np.flatnonzero(bad)[0])} has a NaN or infinite value")
    norms = np.linalg.norm(x, axis=1)
    if (norms == 0).any():
        raise InputError(f"embedding row {int(np.flatnonzero(norms == 0)[0])} is all zeros")
    out: FloatArray = x / norms[:, None]
    return out


def membership_from_similarity(
    similarity: FloatArray, membership: Membership, concentration: float
) -> FloatArray:
    """p(z|x) from cosine similarities to the centroids (items x clusters)."""
    if membership == "hard":
        out = np.zeros_like(similarity)
        out[np.arange(similarity.shape[0]), np.argmax(similarity, axis=1)] = 1.0
        return out
    if membership == "soft":
        logits = concentration * similarity
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        soft: FloatArray = weights / weights.sum(axis=1, keepdims=True)
        return soft
    raise InputError(f"membership must be 'hard' or 'soft', got {membership!r}")


@dataclass(eq=False)
class SphericalKMeans:
    """Spherical k-means with the supplement's settings as defaults.

    Parameters
    ----------
    n_clusters : int
        K.
    samples_per_cluster : int or None
        Fit on a random sample of ``samples_per_cluster * K`` items (all items
        when there are fewer); None fits on every item.
    n_init : int
        Random initialisations (centroids drawn from the sample without
        replacement); the run with the largest objective is kept.
    max_iter : int
        Iterations per initialisation (stops earlier when assignments no
        longer change).
    random_state : int or None
        Seeds the clustering sample and the initialisations (the "cluster"
        seed of Table 5).

    Attributes
    ----------
    centroids_ : ndarray of shape (n_clusters, dim)
        Unit-norm centroids.
    objective_ : float
        Sum of cosine similarities of the clustering sample to its centroids.
    n_iter_ : int
        Iterations of the kept initialisation.
    empty_clusters_ : int
        Clusters of the kept run with no items at the end.
    """

    n_clusters: int
    _: KW_ONLY
    samples_per_cluster: int | None = SAMPLES_PER_CLUSTER
    n_init: int = 3
    max_iter: int = 1000
    random_state: int | None = None

    def fit(self, embeddings: FloatArray) -> SphericalKMeans:
        """Fit the centroids on (a sample of) the embeddings; returns self."""
        x = normalize_rows(embeddings)
        k = int(self.n_clusters)
        if k < 1:
            raise InputError(f"n_clusters must be >= 1, got {self.n_clusters}")
        if x.shape[0] < k:
            raise InputError(f"{x.shape[0]} items cannot form {k} clusters")
        if self.n_init < 1 or self.max_iter < 1:
            raise InputError("n_init and max_iter must be >= 1")
        rng = np.random.default_rng(self.random_state)
        if self.samples_per_cluster is not None and x.shape[0] > self.samples_per_cluster * k:
            sample = x[rng.choice(x.shape[0], self.samples_per_cluster * k, replace=False)]
        else:
            sample = x
        best: tuple[float, FloatArray, int, int] | None = None
        for _ in range(self.n_init):
            centroids = sample[rng.choice(sample.shape[0], k, replace=False)].copy()
            objective, centroids, n_iter, empty = _lloyd(sample, centroids, self.max_iter)
            if best is None or objective > best[0]:
                best = (objective, centroids, n_iter, empty)
        assert best is not None
        self.objective_, self.centroids_, self.n_iter_, self.empty_clusters_ = best
        self.n_samples_fit_ = int(sample.shape[0])
        return self

    def similarity(self, embeddings: FloatArray) -> FloatArray:
        """Cosine similarity of each item to each centroid (items x clusters)."""
        if not hasattr(self, "centroids_"):
            raise RuntimeError("SphericalKMeans is not fitted: call fit first")
        x = normalize_rows(embeddings)
        if x.shape[1] != self.centroids_.shape[1]:
            raise InputError(
                f"embeddings have {x.shape[1]} dimensions, the clustering was fitted on "
                f"{self.centroids_.shape[1]}"
            )
        out: FloatArray = x @ self.centroids_.T
        return out

    def predict(self, embeddings: FloatArray) -> NDArray[np.intp]:
        """Index of the most similar centroid."""
        out: NDArray[np.intp] = np.argmax(self.similarity(embeddings), axis=1)
        return out

    def membership(
        self,
        embeddings: FloatArray,
        membership: Membership = "hard",
        concentration: float = 20.0,
    ) -> FloatArray:
        """p(z|x) (items x clusters), hard or soft (see the module docstring)."""
        return membership_from_similarity(self.similarity(embeddings), membership, concentration)


def _lloyd(
    x: FloatArray, centroids: FloatArray, max_iter: int
) -> tuple[float, FloatArray, int, int]:
    k = centroids.shape[0]
    assign = np.full(x.shape[0], -1)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is reported)
        new_assign = np.argmax(x @ centroids.T, axis=1)
        if np.array_equal(new_assign, assign):
            break
        assign = new_assign
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, x)
        norms = np.linalg.norm(sums, axis=1)
        filled = norms > 0
        centroids = centroids.copy()
        centroids[filled] = sums[filled] / norms[filled, None]
    similarity = x @ centroids.T
    assign = np.argmax(similarity, axis=1)
    objective = float(similarity[np.arange(x.shape[0]), assign].sum())
    empty = k - int(np.unique(assign).size)
    return objective, centroids, n_iter, empty
