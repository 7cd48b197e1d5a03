"""The plugin manager: judgecp's extension points, built-ins and installed plugins alike.

Every plugin, the built-ins included, is found through the ``judgecp``
entry-point group (``pyproject.toml``): the conformal methods
(:mod:`judgecp.stats.methods`), the risk controllers
(:mod:`judgecp.stats.selective`), the score extractor
(:mod:`judgecp.data.extraction`), the judge kinds (:mod:`judgecp.kinds.builtin`)
and the harness adapters' record formats and commands. judgecp's own entry
points are always loaded; set ``JUDGECP_DISABLE_PLUGIN_AUTOLOAD=1`` to leave
out every other distribution's plugins. The registries that read the hooks
live with what they register: :mod:`judgecp.kinds.registry` (methods,
controllers, kinds), :mod:`judgecp.data.formats` (record formats).
"""

from __future__ import annotations

import importlib.metadata
import os
from functools import lru_cache

import pluggy

from judgecp.base import hookspecs

ENTRY_POINT_GROUP = "judgecp"
DISABLE_AUTOLOAD_ENV = "JUDGECP_DISABLE_PLUGIN_AUTOLOAD"
#: The built-in plugins (entry points of the judgecp distribution), registered before any other.
BUILTIN_PLUGINS = ("methods", "selective", "extraction", "kinds")


def make_plugin_manager(*, autoload: bool | None = None) -> pluggy.PluginManager:
    """A fresh plugin manager with the built-ins and (unless disabled) installed plugins."""
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    if autoload is None:
        autoload = not os.environ.get(DISABLE_AUTOLOAD_ENV)
    points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    own = [ep for ep in points if ep.dist is not None and ep.dist.name == "judgecp"]
    builtins = {ep.name: ep for ep in own if ep.name in BUILTIN_PLUGINS}
    missing = [name for name in BUILTIN_PLUGINS if name not in builtins]
    if missing:
        raise RuntimeError(f"judgecp's built-in plugins {missing} are not registered (its entry points): "
                           "reinstall judgecp (pip install -e .)")
    for name in BUILTIN_PLUGINS:
        pm.register(builtins[name].load(), name=name)
    for ep in points:
        is_own = ep.dist is not None and ep.dist.name == "judgecp"
        if (is_own or autoload) and pm.get_plugin(ep.name) is None and not pm.is_blocked(ep.name):
            pm.register(ep.load(), name=ep.name)
    return pm


@lru_cache(maxsize=1)
def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager (built once)."""
    return make_plugin_manager()
