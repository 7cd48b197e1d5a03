"""judgecp's VLMEvalKit startup hook: installed as the top-level module ``_judgecp_vlmeval_hook``.

``judgecp-vlmeval.pth`` (written into site-packages at install time, next to
this module, by the same build step as the lm-eval hook) calls
:func:`install` at interpreter start unless ``JUDGECP_VLMEVAL_AUTOLOAD`` is
``0``/``false``/``no``/``off``. It only adds an import watcher: nothing is
imported until a program imports VLMEvalKit's dataset registry, model
registry or inference module, and then judgecp registers its datasets, its
``-lp`` models, or its sidecar hook there
(:mod:`judgecp.adapters.vlmeval.discovery`). So VLMEvalKit's own ``run.py``
and ``scripts/summarize.py`` know judgecp's datasets without the launcher.
Standard library only, so every other Python program in the environment pays
nothing; any failure is a warning, never a broken VLMEvalKit. Uninstalling
judgecp removes both files.
"""

import importlib.abc
import os
import sys

ENV = "JUDGECP_VLMEVAL_AUTOLOAD"

#: module VLMEvalKit imports -> function of judgecp.adapters.vlmeval.discovery to call after it loads
WATCHED = {
    "vlmeval.dataset": "after_dataset_registry",
    "vlmeval.config": "after_model_registry",
    "vlmeval.inference": "after_inference",
}


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
            from judgecp.adapters.vlmeval import (
                discovery,  # lazy: loaded at interpreter start; judgecp only once VLMEvalKit is imported
            )

            getattr(discovery, self.callback)(module)
        except Exception as exc:  # VLMEvalKit must keep working without judgecp
            import warnings

            warnings.warn(f"judgecp could not extend VLMEvalKit ({type(exc).__name__}: {exc}); "
                          f"set {ENV}=0 to silence, or use `judgecp vlmeval ...`", stacklevel=2)


class Finder(importlib.abc.MetaPathFinder):
    """Wraps the loader of the watched VLMEvalKit modules so judgecp runs right after them."""

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
