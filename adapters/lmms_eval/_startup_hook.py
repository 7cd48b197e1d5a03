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

import _judgecp_startup_hook as _startup

ENV = "JUDGECP_LMMS_EVAL_AUTOLOAD"


class Finder(_startup.Finder):
    """Wraps the loader of lmms-eval's watched modules so judgecp runs right after them."""

    harness = "lmms-eval"
    env = ENV
    watched = (
        ("lmms_eval.tasks", "after_task_manager"),
    )
    discovery = "judgecp.adapters.lmms_eval.discovery"
    instead = "or pass --include_path $(judgecp lmms-eval-tasks-path)"


def enabled():
    return _startup.enabled(ENV)


def install():
    """Put the watcher first on ``sys.meta_path`` (once), unless disabled."""
    _startup.install(Finder)
