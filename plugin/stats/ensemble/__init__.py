"""Calibrated judges from many prompts: (multimodal) Bayesian prompt ensembles.

Implements the method of *Calibrating MLLM-as-a-judge via Multimodal Bayesian
Prompt Ensembles* (supplement: ``../shared/seeds/bayesian-prompt-ensembles-supplement.txt``):
the judge's answer distribution under each of A prompts is pooled with prompt
weights that depend on which cluster of image embeddings an item falls in,
fitted on a small labeled validation set by maximising the lower bound of
eq. (11). Baselines: uniform averaging and the plain (one-cluster) Bayesian
prompt ensemble. Modules, one job each:

* :mod:`~judgecp.stats.ensemble.clustering`: spherical k-means, p(z|x);
* :mod:`~judgecp.stats.ensemble.objective`: eq. (11), its gradient, the L-BFGS fit;
* :mod:`~judgecp.stats.ensemble.estimator`: :class:`PromptEnsemble`, :func:`uniform_proba`;
* :mod:`~judgecp.stats.ensemble.metrics`: ECE, MCE, AUPRC, NLL, error-coverage;
* :mod:`~judgecp.stats.ensemble.selection`: selective prediction with BY FDR control;
* :mod:`~judgecp.data.ensemble.prompts`: the prompt-set builder (shipped parts);
* :mod:`~judgecp.data.ensemble.records`: ``judgecp.record/1`` input, one record per (item, prompt);
* :mod:`~judgecp.data.ensemble.embeddings`: embedding files, the open_clip encoder (extra ``clip``);
* :mod:`~judgecp.data.ensemble.sources`: HPSv2 (HPD v2) and MJ-Bench preference pairs;
* :mod:`~judgecp.kinds.ensemble.sweep`: Table 5's factors, printed like Table 6;
* :mod:`~judgecp.kinds.ensemble.evaluate`: ``main(argv)`` of ``judgecp evaluate --kind ensemble``.

Its seeded test judge, with cluster-dependent prompt reliability, is
:func:`judgecp.synthetic.judges.simulate_prompt_judge` (the one simulator module).
"""

from judgecp.stats.ensemble.clustering import SphericalKMeans
from judgecp.stats.ensemble.estimator import PromptEnsemble, uniform_proba
from judgecp.stats.ensemble.metrics import (
    auprc,
    calibration_summary,
    error_coverage_curve,
    expected_calibration_error,
    maximum_calibration_error,
    negative_log_likelihood,
)
from judgecp.stats.ensemble.objective import fit_weights, lower_bound, objective
from judgecp.stats.ensemble.selection import select_by_fdr

__all__ = [
    "PromptEnsemble",
    "SphericalKMeans",
    "auprc",
    "calibration_summary",
    "error_coverage_curve",
    "expected_calibration_error",
    "fit_weights",
    "lower_bound",
    "maximum_calibration_error",
    "negative_log_likelihood",
    "objective",
    "select_by_fdr",
    "uniform_proba",
]
