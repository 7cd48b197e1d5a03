"""Making lm-eval find judgecp's models and tasks without ``--include_path``.

Called by the startup hook (:mod:`judgecp.adapters.lm_eval._startup_hook`)
right after lm-eval imports the module named, or by :func:`install` (the
``judgecp lm-eval`` wrapper, tests). Models are registered as lazy
placeholders after lm-eval's built-ins; the task folder is appended to the
include path of every ``TaskManager`` that includes lm-eval's own tasks.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judgecp.adapters.lm_eval import tasks_path
from judgecp.base.errors import InputError

_PATCHED = "__judgecp_include_path__"


def after_model_registry(_module: Any = None) -> None:
    from judgecp.adapters.lm_eval import register  # lazy: imports the harness (torch, lm-eval)

    register()
    install_excepthook()


def install_excepthook() -> None:
    """Print a judgecp settings error that reaches the top of a process on one line, not as a traceback.

    lm-eval builds its tasks without catching their errors, so a bad
    ``--metadata`` value would end the run in a long traceback whose useful
    line comes last. Other exceptions keep the default hook.
    """
    import sys

    previous = sys.excepthook
    if getattr(previous, _PATCHED, False):
        return

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if isinstance(value, InputError):
            print(f"judgecp: error: {value}", file=sys.stderr)
            return
        previous(kind, value, tb)

    setattr(hook, _PATCHED, True)
    sys.excepthook = hook


def after_task_manager(module: Any = None) -> None:
    """Wrap ``TaskManager.__init__`` to add judgecp's task folder to its include path."""
    if module is None:
        import lm_eval.tasks.manager as module
    wrap_include_path(module.TaskManager, tasks_path, after=install_excepthook)


def wrap_include_path(manager: Any, folder: Callable[[], Path], after: Callable[[], None] | None = None) -> None:
    """Wrap ``manager.__init__`` (a harness's ``TaskManager``: ``include_path``, ``include_defaults``)
    to add ``folder()`` to its include path; then call ``after``. Once per class.

    Harness-neutral: the lmms-eval adapter wraps lmms-eval's ``TaskManager`` with it.
    """
    init = manager.__init__
    if getattr(init, _PATCHED, False):
        return
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        if bound.arguments.get("include_defaults", True):
            bound.arguments["include_path"] = with_folder(bound.arguments.get("include_path"), folder())
        init(*bound.args, **bound.kwargs)
        if after is not None:
            after()

    setattr(__init__, _PATCHED, True)
    manager.__init__ = __init__


def with_judgecp_tasks(include_path: Any) -> Any:
    """``include_path`` plus judgecp's task folder (unless already there)."""
    return with_folder(include_path, tasks_path())


def with_folder(include_path: Any, ours: Path) -> Any:
    """``include_path`` plus the folder ``ours`` (unless already there)."""
    ours = ours.resolve()
    if include_path is None:
        return str(ours)
    paths = list(include_path) if isinstance(include_path, (list, tuple)) else [include_path]
    if any(Path(p).expanduser().resolve() == ours for p in paths):
        return include_path
    return [*paths, str(ours)]


def install() -> None:
    """Register the models and patch the task manager now (what the hook does lazily)."""
    after_model_registry()
    after_task_manager()
