"""judgecp's lmms-eval startup hook: installed as the top-level module ``_judgecp_lmms_eval_hook``.

``judgecp-lmms-eval.pth`` (written into site-packages at install time, next to
this module, by ``judgecp.adapters.lm_eval._build``) calls :func:`install` at
interpreter start unless ``JUDGECP_LMMS_EVAL_AUTOLOAD`` is
``0``/``false``/``no``/``off``. It only adds an import watcher: nothing is
imported until a program imports lmms-eval's task package, and then judgecp
adds its task folder to every ``TaskManager`` (judgecp's models come from the
``lmms_eval.models`` entry points, no hook needed). Standard library only;
any failure is a warning, never a broken lmms-eval.
"""

import importlib.abc
import os
import sys

ENV = "JUDGECP_LMMS_EVAL_AUTOLOAD"

#: module lmms-eval imports -> function of judgecp.adapters.lmms_eval.discovery to call after it loads
WATCHED = {"lmms_eval.tasks": "after_task_manager"}


def enabled():
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, callback):
        self.inner = inner
        self.callback = callback

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        try:
            from judgecp.adapters.lmms_eval import (
                discovery,  # lazy: loaded at interpreter start; judgecp only once the harness is imported
            )

            getattr(discovery, self.callback)(module)
        except Exception as exc:  # lmms-eval must keep working without judgecp
            import warnings

            warnings.warn(f"judgecp could not extend lmms-eval ({type(exc).__name__}: {exc}); "
                          f"set {ENV}=0 to silence, or pass --include_path $(judgecp lmms-eval-tasks-path)",
                          stacklevel=2)


class Finder(importlib.abc.MetaPathFinder):
    """Wraps the loader of the watched lmms-eval module so judgecp runs right after it."""

    def find_spec(self, name, path, target=None):
        callback = WATCHED.get(name)
        if callback is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, callback)
                return spec
        return None


def install():
    """Put the watcher first on ``sys.meta_path`` (once), unless disabled."""
    if enabled() and not any(isinstance(f, Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, Finder())
