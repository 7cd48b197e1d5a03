"""The pairwise kind: A/B verdicts judged in both orders, selective risk control (SCOPE).

Parts: :mod:`~judgecp.kinds.pairwise.reader`, :mod:`~judgecp.kinds.pairwise.study`,
:mod:`~judgecp.kinds.pairwise.calibration`, :mod:`~judgecp.kinds.pairwise.present` and its
:mod:`~judgecp.kinds.pairwise.figures`.
"""
