"""Tests of judgecp.workflows.ensemble (prompt ensembles)."""
