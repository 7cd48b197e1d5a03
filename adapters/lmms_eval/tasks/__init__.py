"""judgecp's lmms-eval task folders (package data): one folder per benchmark.

``judgecp lmms-eval-tasks-path`` prints this folder; with judgecp installed,
lmms-eval finds it without ``--include_path`` (the startup hook).
"""
