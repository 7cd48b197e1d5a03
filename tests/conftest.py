"""Test-wide fixtures."""

from __future__ import annotations

import os

import pytest

# One thread per test process, before anything loads OpenMP or BLAS: `make test` runs two
# pytest workers on two cores, and scikit-learn's boosting with a thread per core in each worker
# spins (the suite took 5x longer). Subprocesses (lm_eval runs) inherit it.
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    if not os.environ.get(_name):
        os.environ[_name] = "1"


@pytest.fixture(autouse=True)
def _no_third_party_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see the built-ins only, whatever else is installed."""
    monkeypatch.setenv("JUDGECP_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture(autouse=True)
def _no_progress_lines_by_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command's progress lines start after judgecp.base.progress.DELAY seconds: on a busy machine a slow
    test would get them on stderr by chance. tests/test_progress.py sets the delay it tests."""
    import judgecp.base.progress

    monkeypatch.setattr(judgecp.base.progress, "DELAY", float("inf"))
