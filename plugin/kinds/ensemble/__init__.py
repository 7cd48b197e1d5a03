"""The prompt-ensemble kind: one judge's answers to every item under many prompts, pooled (docs/ensembles.md).

Records of any shape tied by ``meta.item`` are read and evaluated by the kind's own command
(:mod:`~judgecp.kinds.ensemble.command`, :mod:`~judgecp.kinds.ensemble.evaluate`): uniform averaging,
the Bayesian prompt ensemble and the multimodal mixture. The study both harnesses run is
:mod:`~judgecp.kinds.ensemble.study`; Table 5's sweep :mod:`~judgecp.kinds.ensemble.sweep`.
"""
