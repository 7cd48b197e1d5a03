"""The plugin manager: judgecp's extension points, built-ins and installed plugins alike.

The built-ins are plugins too, registered first by module name, as pytest
registers its own (:data:`BUILTIN_PLUGINS`: the conformal methods, the risk
controllers, the score extractor, the judge kinds); this module names them
but imports none of them itself, so the foundations import nothing above
them. Other plugins are found through the ``judgecp`` entry-point group:
judgecp's own harness adapters (record formats, commands) are always
loaded; set ``JUDGECP_DISABLE_PLUGIN_AUTOLOAD=1`` to leave out every other
distribution's plugins. The registries that read the hooks
live with what they register: :mod:`judgecp.kinds.registry` (methods,
controllers, kinds), :mod:`judgecp.data.formats` (record formats).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from functools import lru_cache

import pluggy

from judgecp.base import hookspecs

ENTRY_POINT_GROUP = "judgecp"
DISABLE_AUTOLOAD_ENV = "JUDGECP_DISABLE_PLUGIN_AUTOLOAD"
#: The built-in plugins, registered before any other (imported by name when the manager is made).
BUILTIN_PLUGINS = ("judgecp.stats.methods", "judgecp.stats.selective", "judgecp.data.extraction",
                   "judgecp.kinds.builtin")


def make_plugin_manager(*, autoload: bool | None = None) -> pluggy.PluginManager:
    """A fresh plugin manager with the built-ins and (unless disabled) installed plugins."""
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    if autoload is None:
        autoload = not os.environ.get(DISABLE_AUTOLOAD_ENV)
    for module_name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(module_name), name=module_name)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        is_own = ep.dist is not None and ep.dist.name == "judgecp"
        if (is_own or autoload) and pm.get_plugin(ep.name) is None and not pm.is_blocked(ep.name):
            pm.register(ep.load(), name=ep.name)
    return pm


@lru_cache(maxsize=1)
def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager (built once)."""
    return make_plugin_manager()
