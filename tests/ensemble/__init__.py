"""Tests of judgecp.ensemble (prompt ensembles)."""
