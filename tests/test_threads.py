"""Pinned thread pools (judgecp.base.threads): one BLAS/OpenMP thread for a command, the user's setting kept."""

from __future__ import annotations

import os
from typing import Any

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from judgecp.base import threads
from judgecp.cli import main


@pytest.fixture
def no_user_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests run with OMP_NUM_THREADS=1 (README): here, as a user who set nothing."""
    for name in threads.THREAD_ENV:
        monkeypatch.delenv(name, raising=False)


def pool_sizes() -> list[int]:
    return [int(p["num_threads"]) for p in threadpool_info()]


def test_pinned_limits_the_loaded_pools_and_the_environment_then_restores(no_user_threads) -> None:
    assert pool_sizes(), "numpy's BLAS is loaded: there is a pool to pin"
    with threadpool_limits(limits=2):  # as an unpinned 2-core machine starts
        assert set(pool_sizes()) == {2}
        with threads.pinned() as did:
            assert did is True
            assert set(pool_sizes()) == {1}
            assert all(os.environ[name] == "1" for name in threads.THREAD_ENV)  # for pools loaded later, workers
        assert set(pool_sizes()) == {2}
    assert not any(name in os.environ for name in threads.THREAD_ENV)


@pytest.mark.parametrize("name", threads.USER_ENV)
def test_a_users_explicit_setting_is_kept(no_user_threads, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "2")
    with threadpool_limits(limits=2):
        with threads.pinned() as did:
            assert did is False
            assert set(pool_sizes()) == {2}
            assert os.environ[name] == "2"
            assert not any(other in os.environ for other in threads.THREAD_ENV if other != name)


def test_commands_run_pinned_unless_they_run_a_model(no_user_threads, monkeypatch: pytest.MonkeyPatch) -> None:
    import judgecp.cli.evaluate as evaluate_cli

    seen: list[Any] = []

    def spy(args: Any) -> int:
        seen.append((set(pool_sizes()), os.environ.get("OMP_NUM_THREADS")))
        return 0

    monkeypatch.setattr(evaluate_cli, "run_evaluate", spy)
    with threadpool_limits(limits=2):
        assert main(["evaluate", "--example"]) == 0
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        assert main(["evaluate", "--example"]) == 0
    assert seen == [({1}, "1"), ({2}, "2")]
    assert threads.runs_a_model(("bench", "capture")) and threads.runs_a_model(("lm-eval", None))
    assert not threads.runs_a_model(("bench", "protocol")) and not threads.runs_a_model(("evaluate", None))


def test_threads_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"), threads.pinned(0):
        pass
