"""Tests of judgecp.kinds.ensemble (prompt ensembles)."""
