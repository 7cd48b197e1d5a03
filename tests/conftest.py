"""Test-wide fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_third_party_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see the built-ins only, whatever else is installed."""
    monkeypatch.setenv("JUDGECP_DISABLE_PLUGIN_AUTOLOAD", "1")
