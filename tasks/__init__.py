"""judgecp's lm-evaluation-harness task folders (package data): one folder per benchmark.

``judgecp tasks-path`` prints this folder; with ``judgecp[lm-eval]`` installed,
lm-eval finds it without ``--include_path``.
"""
