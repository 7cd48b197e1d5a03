"""Test-wide fixtures."""

from __future__ import annotations

import os
import signal

import pytest
from hypothesis import settings

# A shell without job control starts background commands with SIGINT ignored (`make test &`, a CI runner's
# script), and child processes inherit that: the Ctrl-C tests (tests/test_interrupts.py, tests/test_outputs.py)
# would then see no KeyboardInterrupt. The suite restores Python's own handler, which its subprocesses get too.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Hypothesis in CI (`make test` sets JUDGECP_HYPOTHESIS_PROFILE=ci): derandomized, so two runs of one commit
# try the same examples (each test's seed is a digest of the test itself, fixed until its code changes), and
# without the example database, whose stored failures would change what runs. A failure prints its example
# and @reproduce_failure blob. Elsewhere hypothesis draws new examples each run (and keeps failures locally).
# Loaded here, before the test modules: their @settings inherit the profile.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
HYPOTHESIS_PROFILE = os.environ.get("JUDGECP_HYPOTHESIS_PROFILE", "default")
settings.load_profile(HYPOTHESIS_PROFILE)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The hypothesis profile and how its examples were seeded, at the end of every run (-q included)."""
    current = settings.default
    seeding = (
        "derandomized: each test's seed is a digest of its own code"
        if current is not None and current.derandomize
        else "random seeds (JUDGECP_HYPOTHESIS_PROFILE=ci fixes them, as make test does)"
    )
    terminalreporter.write_line(f"hypothesis: profile {HYPOTHESIS_PROFILE!r}, {seeding}")

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
