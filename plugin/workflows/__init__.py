"""Layer 5, workflows: the repeated-split study, calibrators, the nightly commands, results and reports.

Each works on any kind through the kinds registry (:mod:`judgecp.kinds`), never by a kind's name.
"""
