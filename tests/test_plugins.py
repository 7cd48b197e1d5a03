"""The plugin system: hooks documented, built-ins as plugins, third parties, the off switch."""

from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from judgecp.base import hookspecs
from judgecp.base.hookspecs import hookimpl
from judgecp.base.plugins import DISABLE_AUTOLOAD_ENV, make_plugin_manager
from judgecp.data.extraction import ScoreExtraction, extract_score
from judgecp.kinds.registry import build_method, method_classes
from judgecp.stats.methods.spec import parse_method_spec, split_method_list
from tests.helpers import REPO, judge_draw

DOC = REPO / "docs" / "plugins.md"


def hook_names() -> list[str]:
    return [n for n in dir(hookspecs) if not n.startswith("_") and hasattr(getattr(hookspecs, n), "judgecp_spec")]


def test_every_hook_is_documented() -> None:
    text = DOC.read_text()
    names = hook_names()
    assert names, "no hookspecs found"
    for name in names:
        spec = inspect.signature(getattr(hookspecs, name))
        heading = f"### `{name}({', '.join(spec.parameters)})`"
        assert heading in text, f"hook {name} is not documented in docs/plugins.md as {heading}"
        assert getattr(hookspecs, name).__doc__, f"hook {name} has no docstring"


def test_builtins_register_through_the_hooks() -> None:
    pm = make_plugin_manager(autoload=False)
    names = set(method_classes(pm))
    assert {"naive", "cqr", "cqr_asym", "chr", "lvd", "boosted_cqr", "boosted_lcp", "r2ccp",
            "ordinal_aps", "lac", "aps", "raps", "ordinal_set", "margin"} == names
    assert {p for p in pm.get_plugins() if isinstance(p, types.ModuleType)} >= {
        sys.modules["judgecp.stats.methods"], sys.modules["judgecp.data.extraction"]}


def test_documented_template_is_a_working_plugin() -> None:
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)[-1]
    module = types.ModuleType("doc_template_plugin")
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    pm = make_plugin_manager(autoload=False)
    pm.register(module)
    assert "signed_upper" in method_classes(pm)
    rng = np.random.default_rng(0)
    covs = []
    for _ in range(60):
        m = build_method("signed_upper", alpha=0.1, scale=module.SignedSplit().scale, pm=pm)
        m.conformalize(*judge_draw(300, rng))
        X, y = judge_draw(500, rng)
        covs.append(np.mean(y <= m.predict(X).upper))
    assert abs(np.mean(covs) - 0.9) < 0.01


def test_duplicate_method_names_are_an_error() -> None:
    class Impostor:
        name = "naive"

    plugin = types.ModuleType("impostor")
    plugin.register_interval_methods = hookimpl(lambda: [Impostor])  # type: ignore[attr-defined]
    pm = make_plugin_manager(autoload=False)
    pm.register(plugin)
    with pytest.raises(RuntimeError, match="two plugins register a method named 'naive'"):
        method_classes(pm)


def test_extraction_hook_first_result_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    import judgecp.data.extraction as extraction

    custom = ScoreExtraction({"1": -1.0, "2": -1.0, "3": -1.0, "4": -1.0, "5": -1.0}, 0, "json", 3)
    plugin = types.ModuleType("json_verdict")
    plugin.extract_score_logprobs = hookimpl(lambda tokens, position_logprobs, scale, floor: custom)  # type: ignore[attr-defined]
    pm = make_plugin_manager(autoload=False)
    pm.register(plugin)
    monkeypatch.setattr(extraction, "get_plugin_manager", lambda: pm)
    assert extract_score(["Score", ":", " 4"], [{}, {}, {" 4": -0.1}]) is custom


def _fake_distribution(tmp_path: Path) -> None:
    (tmp_path / "fake_judgecp_plugin.py").write_text(
        "from judgecp.base.hookspecs import hookimpl\n"
        "from judgecp.stats.methods import NaiveSplit\n"
        "class Renamed(NaiveSplit):\n    name = 'renamed_naive'\n"
        "@hookimpl\ndef register_interval_methods():\n    return [Renamed]\n"
    )
    dist = tmp_path / "fake_judgecp_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-judgecp-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[judgecp]\nfake = fake_judgecp_plugin\n")


def test_entry_point_autoload_and_the_off_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_distribution(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(DISABLE_AUTOLOAD_ENV, raising=False)
    assert "renamed_naive" in method_classes(make_plugin_manager())
    monkeypatch.setenv(DISABLE_AUTOLOAD_ENV, "1")
    assert "renamed_naive" not in method_classes(make_plugin_manager())


def test_method_specs() -> None:
    assert parse_method_spec("lac") == ("lac", {})
    assert parse_method_spec("lac(probabilities=recalibrated, fit_fraction=0.3)") == (
        "lac", {"probabilities": "recalibrated", "fit_fraction": 0.3})
    assert parse_method_spec("r2ccp(hidden=(8, 4))") == ("r2ccp", {"hidden": (8, 4)})
    assert split_method_list("naive, lac(probabilities=recalibrated, fit_fraction=0.3),aps") == [
        "naive", "lac(probabilities=recalibrated, fit_fraction=0.3)", "aps"]
