"""Making lmms-eval find judgecp's tasks without ``--include_path``.

Called by the startup hook (:mod:`judgecp.adapters.lmms_eval._startup_hook`)
right after lmms-eval imports ``lmms_eval.tasks``, or by :func:`install`
(``judgecp lmms-eval``, tests): the task folder is appended to the include
path of every ``TaskManager`` that includes lmms-eval's own tasks. The
models need no hook (``lmms_eval.models`` entry points).

The wrapping itself is the lm-eval adapter's
(:func:`judgecp.adapters.lm_eval.discovery.wrap_include_path`): both harnesses'
``TaskManager`` take ``include_path`` and ``include_defaults`` the same way.
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lm_eval.discovery import wrap_include_path
from judgecp.adapters.lmms_eval import tasks_path


def after_task_manager(module: Any = None) -> None:
    """Wrap ``lmms_eval.tasks.TaskManager.__init__`` to add judgecp's task folder to its include path."""
    if module is None:
        import lmms_eval.tasks as module
    wrap_include_path(module.TaskManager, tasks_path)


def install() -> None:
    """Patch the task manager now (what the hook does lazily)."""
    after_task_manager()
