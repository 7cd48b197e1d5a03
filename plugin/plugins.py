"""The plugin manager and the method registry.

Third-party plugins are discovered through the ``judgecp`` entry-point
group; set ``JUDGECP_DISABLE_PLUGIN_AUTOLOAD=1`` to load built-ins only.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
from functools import lru_cache
from typing import Any

import pluggy

from judgecp import hookspecs
from judgecp.conformal import ConformalMethod
from judgecp.errors import InputError, MissingDependencyError
from judgecp.scale import LikertScale

ENTRY_POINT_GROUP = "judgecp"
DISABLE_AUTOLOAD_ENV = "JUDGECP_DISABLE_PLUGIN_AUTOLOAD"
BUILTIN_PLUGINS = ("judgecp.methods", "judgecp.extraction", "judgecp.selective")


def make_plugin_manager(*, autoload: bool | None = None) -> pluggy.PluginManager:
    """A fresh plugin manager with the built-ins and (unless disabled) installed plugins."""
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    for module_name in BUILTIN_PLUGINS:
        module = importlib.import_module(module_name)
        pm.register(module, name=module_name)
    if autoload is None:
        autoload = not os.environ.get(DISABLE_AUTOLOAD_ENV)
    if autoload:
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    return pm


@lru_cache(maxsize=1)
def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager (built once)."""
    return make_plugin_manager()


def method_classes(pm: pluggy.PluginManager | None = None) -> dict[str, type[ConformalMethod]]:
    """Every registered method class by name, interval methods first."""
    pm = pm or get_plugin_manager()
    found: dict[str, type[ConformalMethod]] = {}
    for hook in (pm.hook.register_interval_methods, pm.hook.register_set_methods):
        for classes in reversed(hook()):  # registration order
            for cls in classes:
                if cls.name in found and found[cls.name] is not cls:
                    raise RuntimeError(
                        f"two plugins register a method named {cls.name!r}: "
                        f"{found[cls.name].__module__} and {cls.__module__}"
                    )
                found[cls.name] = cls
    return found


def is_available(cls: type[ConformalMethod]) -> bool:
    """Whether the method's optional dependencies are importable."""
    return all(importlib.util.find_spec(module) is not None for module, _ in cls.requires)


def missing_dependency(cls: type[ConformalMethod]) -> MissingDependencyError | None:
    for module, extra in cls.requires:
        if importlib.util.find_spec(module) is None:
            return MissingDependencyError(module, extra, f"the {cls.name} method")
    return None


_SPEC = re.compile(r"^\s*([A-Za-z_][\w]*)\s*(?:\((.*)\))?\s*$", re.S)


def parse_method_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Parse ``"name"`` or ``"name(key=value, ...)"`` into a name and keyword arguments.

    Values are Python literals; a bare word is taken as a string, so
    ``lac(probabilities=recalibrated)`` works without quotes.
    """
    match = _SPEC.match(spec)
    if not match:
        raise InputError(f"cannot read method {spec!r}; write NAME or NAME(key=value, ...)")
    name, args = match.group(1), (match.group(2) or "").strip()
    kwargs: dict[str, Any] = {}
    if args:
        try:
            call = ast.parse(f"f({args})", mode="eval").body
        except SyntaxError as exc:
            raise InputError(f"cannot read the arguments of method {spec!r}: {exc.msg}") from exc
        assert isinstance(call, ast.Call)
        if call.args:
            raise InputError(f"method {spec!r}: arguments must be key=value")
        for kw in call.keywords:
            node = kw.value
            if isinstance(node, ast.Name):
                kwargs[str(kw.arg)] = node.id
            else:
                try:
                    kwargs[str(kw.arg)] = ast.literal_eval(node)
                except ValueError as exc:
                    raise InputError(f"method {spec!r}: {kw.arg} must be a literal") from exc
    return name, kwargs


def canonical_spec(name: str, kwargs: dict[str, Any]) -> str:
    """The spec string used as the method's key in reports."""
    if not kwargs:
        return name
    inner = ", ".join(f"{k}={v}" for k, v in sorted(kwargs.items()))
    return f"{name}({inner})"


def split_method_list(text: str) -> list[str]:
    """Split ``"naive,lac(probabilities=recalibrated, fit_fraction=0.3),aps"`` at top-level commas."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return [s for s in out if s]


def build_method(
    spec: str,
    *,
    alpha: float,
    scale: LikertScale,
    random_state: int | None = None,
    pm: pluggy.PluginManager | None = None,
) -> ConformalMethod:
    """Instantiate a registered method from its spec string."""
    name, kwargs = parse_method_spec(spec)
    classes = method_classes(pm)
    if name not in classes:
        raise InputError(f"unknown method {name!r}; available: {', '.join(classes)}")
    cls = classes[name]
    missing = missing_dependency(cls)
    if missing is not None:
        raise missing
    try:
        return cls(alpha, scale=scale, random_state=random_state, **kwargs)
    except TypeError as exc:
        raise InputError(f"method {spec!r}: {exc}") from exc
