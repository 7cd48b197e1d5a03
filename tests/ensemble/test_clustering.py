"""Spherical k-means and cluster membership."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from judgecp.base.errors import InputError
from judgecp.stats.ensemble.clustering import SphericalKMeans
from judgecp.synthetic.judges import simulate_prompt_judge


def test_recovers_well_separated_clusters():
    sim = simulate_prompt_judge(1200, 4, 6, random_state=2)
    km = SphericalKMeans(6, random_state=0).fit(sim.embeddings)
    assert adjusted_rand_score(sim.cluster, km.predict(sim.embeddings)) > 0.99
    assert np.allclose(np.linalg.norm(km.centroids_, axis=1), 1.0)


def test_clustering_sample_is_256_per_cluster_and_seeded():
    sim = simulate_prompt_judge(3000, 2, 4, random_state=1)
    km = SphericalKMeans(4, random_state=5).fit(sim.embeddings)
    assert km.n_samples_fit_ == 256 * 4
    again = SphericalKMeans(4, random_state=5).fit(sim.embeddings)
    np.testing.assert_array_equal(km.centroids_, again.centroids_)
    assert SphericalKMeans(8, random_state=5).fit(sim.embeddings).n_samples_fit_ == 2048
    assert SphericalKMeans(16, random_state=5).fit(sim.embeddings).n_samples_fit_ == 3000


def test_best_of_several_initialisations_is_kept(monkeypatch):
    from judgecp.stats.ensemble import clustering

    runs = []
    original = clustering._lloyd

    def recording(*args):
        out = original(*args)
        runs.append(out[0])
        return out

    monkeypatch.setattr(clustering, "_lloyd", recording)
    x = np.random.default_rng(0).normal(size=(400, 5))  # no clear clusters: initialisations disagree
    best = SphericalKMeans(7, n_init=5, random_state=3).fit(x)
    assert len(runs) == 5 and len(set(np.round(runs, 9))) > 1
    assert best.objective_ == max(runs)


def test_membership_hard_soft_and_the_hard_limit():
    sim = simulate_prompt_judge(500, 2, 3, random_state=4)
    km = SphericalKMeans(3, random_state=0).fit(sim.embeddings)
    hard = km.membership(sim.embeddings, "hard")
    soft = km.membership(sim.embeddings, "soft", concentration=5.0)
    np.testing.assert_allclose(hard.sum(axis=1), 1.0)
    np.testing.assert_allclose(soft.sum(axis=1), 1.0)
    assert set(np.unique(hard)) == {0.0, 1.0}
    assert (soft > 0).all() and (soft < 1).all()
    np.testing.assert_array_equal(np.argmax(soft, axis=1), km.predict(sim.embeddings))
    sharp = km.membership(sim.embeddings, "soft", concentration=1e4)
    np.testing.assert_allclose(sharp, hard, atol=1e-6)


def test_bad_embeddings_are_named():
    with pytest.raises(InputError, match="row 1 is all zeros"):
        SphericalKMeans(1).fit(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(InputError, match="NaN"):
        SphericalKMeans(1).fit(np.array([[1.0, np.nan]]))
    with pytest.raises(InputError, match="cannot form 3 clusters"):
        SphericalKMeans(3).fit(np.eye(2))
    km = SphericalKMeans(2, random_state=0).fit(np.eye(3))
    with pytest.raises(InputError, match="2 dimensions"):
        km.predict(np.ones((1, 2)))
    with pytest.raises(RuntimeError, match="not fitted"):
        SphericalKMeans(2).predict(np.eye(2))
