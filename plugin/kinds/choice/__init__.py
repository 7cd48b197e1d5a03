"""The multiple-choice kinds: conformal option sets (``mcq``) and PARC's reliability across prompts (``parc``).

Both read choice records (:mod:`~judgecp.kinds.choice.reader`); ``parc`` records are calibrated as
``mcq`` (:mod:`~judgecp.kinds.choice.calibration`). Studies: :mod:`~judgecp.kinds.choice.study` (option
sets) and :mod:`~judgecp.kinds.choice.parc_study`; :mod:`~judgecp.kinds.choice.present` and its
:mod:`~judgecp.kinds.choice.figures`.
"""
