"""judgecp's lm-eval startup hook: installed as the top-level module ``_judgecp_lm_eval_hook``.

``judgecp-lm-eval.pth`` (written into site-packages at install time, next to
this module) calls :func:`install` at interpreter start unless
``JUDGECP_LM_EVAL_AUTOLOAD`` is ``0``/``false``/``no``/``off``. It only adds
an import watcher: nothing is imported until a program imports lm-eval's
model registry or task manager, and then judgecp registers its models
(after lm-eval's built-ins) and its task folder. The watcher itself is
``_judgecp_startup_hook`` (``adapters/_startup_hook.py``), shared by the three harnesses.
"""

import _judgecp_startup_hook as _startup

ENV = "JUDGECP_LM_EVAL_AUTOLOAD"


class Finder(_startup.Finder):
    """Wraps the loader of lm-eval's watched modules so judgecp runs right after them."""

    harness = "lm-eval"
    env = ENV
    watched = (
        ("lm_eval.api.registry", "after_model_registry"),
        ("lm_eval.tasks.manager", "after_task_manager"),
    )
    discovery = "judgecp.adapters.lm_eval.discovery"
    instead = "or use `judgecp lm-eval ...`"


def enabled():
    return _startup.enabled(ENV)


def install():
    """Put the watcher first on ``sys.meta_path`` (once), unless disabled."""
    _startup.install(Finder)
