"""The Likert kind: a judge's scores on a rating scale, conformal intervals and label sets.

Parts: :mod:`~judgecp.kinds.likert.reader`, :mod:`~judgecp.kinds.likert.study` (with
:mod:`~judgecp.kinds.likert.continuous` for labels on their own scale),
:mod:`~judgecp.kinds.likert.calibration`, :mod:`~judgecp.kinds.likert.present` and its
:mod:`~judgecp.kinds.likert.figures`.
"""
