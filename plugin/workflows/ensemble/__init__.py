"""The prompt-ensemble study: ``judgecp evaluate --kind ensemble``, the harnesses' study and Table 5's sweep.

The estimators' numbers are in :mod:`judgecp.stats.ensemble`, the inputs in :mod:`judgecp.data.ensemble`.
"""
