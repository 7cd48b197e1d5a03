"""What judgecp's three startup hooks share: installed as the top-level module ``_judgecp_startup_hook``.

Each harness's hook (``_judgecp_lm_eval_hook``, ``_judgecp_vlmeval_hook``,
``_judgecp_lmms_eval_hook``; their sources are ``adapters/<harness>/_startup_hook.py``)
is a :class:`Finder` subclass naming the modules to watch and judgecp's
discovery module, loaded by a ``.pth`` file at interpreter start. It only adds
an import watcher: nothing of judgecp is imported until the program imports one
of the watched harness modules, and then the watcher calls the discovery
function named for that module right after the module's body ran. Standard
library only, so every other Python program in the environment pays nothing;
any failure is a warning, never a broken harness. The build step
(``adapters/lm_eval/_build.py``) writes all of these into site-packages, and
``pip uninstall judgecp`` removes them.
"""

import importlib
import importlib.abc
import os
import sys


def enabled(env):
    """Whether the hook of the harness whose switch is ``env`` is on (anything but 0/false/no/off)."""
    return os.environ.get(env, "1").strip().lower() not in ("0", "false", "no", "off")


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, finder, callback):
        self.inner = inner
        self.finder = finder
        self.callback = callback

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        finder = self.finder
        try:
            discovery = importlib.import_module(finder.discovery)
            getattr(discovery, self.callback)(module)
        except Exception as exc:  # the harness must keep working without judgecp
            import warnings

            warnings.warn(f"judgecp could not extend {finder.harness} ({type(exc).__name__}: {exc}); "
                          f"set {finder.env}=0 to silence, {finder.instead}", stacklevel=2)


class Finder(importlib.abc.MetaPathFinder):
    """Wraps the loader of the watched harness modules so judgecp runs right after them (subclass per harness)."""

    #: The harness's name in messages.
    harness = ""
    #: The environment switch (``0``/``false``/``no``/``off`` turns the hook off).
    env = ""
    #: ``(module the harness imports, function of`` :attr:`discovery` ``to call after it loads)`` pairs.
    watched = ()
    #: judgecp's discovery module for the harness, imported only when a watched module loads.
    discovery = ""
    #: What to do instead, for the warning.
    instead = ""

    def find_spec(self, name, path, target=None):
        callback = dict(self.watched).get(name)
        if callback is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self, callback)
                return spec
        return None


def install(finder_class):
    """Put a ``finder_class`` watcher first on ``sys.meta_path`` (once), unless its switch is off."""
    if enabled(finder_class.env) and not any(isinstance(f, finder_class) for f in sys.meta_path):
        sys.meta_path.insert(0, finder_class())


#: Each harness: its name in messages, its switch, the modules to watch (-> discovery function), what
#: to do instead when judgecp cannot extend it.
HARNESSES = {
    "lm_eval": ("lm-eval", "JUDGECP_LM_EVAL_AUTOLOAD",
                (("lm_eval.api.registry", "after_model_registry"), ("lm_eval.tasks.manager", "after_task_manager")),
                "or use `judgecp lm-eval ...`"),
    "vlmeval": ("VLMEvalKit", "JUDGECP_VLMEVAL_AUTOLOAD",
                (("vlmeval.dataset", "after_dataset_registry"), ("vlmeval.config", "after_model_registry"),
                 ("vlmeval.inference", "after_inference")),
                "or use `judgecp vlmeval ...`"),
    "lmms_eval": ("lmms-eval", "JUDGECP_LMMS_EVAL_AUTOLOAD", (("lmms_eval.tasks", "after_task_manager"),),
                  "or pass --include_path $(judgecp lmms-eval-tasks-path)"),
}


def harness_hook(package, module):
    """``(Finder, enabled, install)`` of the hook of ``package`` (a key of :data:`HARNESSES`), the Finder
    class made in ``module`` (the hook's own top-level module, as ``sys.meta_path`` shows it)."""
    harness, env, watched, instead = HARNESSES[package]
    finder = type(
        "Finder",
        (Finder,),
        {
            "__module__": module,
            "__doc__": f"Wraps the loader of {harness}'s watched modules so judgecp runs right after them.",
            "harness": harness,
            "env": env,
            "watched": watched,
            "instead": instead,
            "discovery": f"judgecp.adapters.{package}.discovery",
        },
    )
    return finder, (lambda: enabled(env)), (lambda: install(finder))
