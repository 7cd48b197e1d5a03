"""Harness-facing code (``judgecp.adapters``): each subpackage imports its harness lazily.

``judgecp.adapters.lm_eval``: lm-evaluation-harness models, task glue and discovery.
"""
