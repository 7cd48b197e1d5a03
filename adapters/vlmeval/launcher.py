"""``judgecp vlmeval <run.py arguments>``: register judgecp into VLMEvalKit, then run its ``run.py``.

VLMEvalKit's ``run.py`` is a script in the checkout, not part of the
installed package, so the launcher finds it, registers judgecp's datasets
and models in this process, installs the sidecar hook and executes it as
``__main__`` with the same arguments. Where ``run.py`` comes from:

1. ``$JUDGECP_VLMEVAL_RUN``: the path of ``run.py`` or of the checkout
   that contains it;
2. otherwise beside the installed ``vlmeval`` package (an editable install
   of a checkout, ``pip install -e VLMEvalKit``, has it there).

Multi-GPU: ``torchrun --nproc-per-node=8 --no-python judgecp vlmeval ...``.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.register import Registration, register, require_vlmeval
from judgecp.adapters.vlmeval.runtime import mark_mcq, register_prompt, run_context
from judgecp.adapters.vlmeval.specs import spec_for
from judgecp.base.errors import InputError

ENV_RUN = "JUDGECP_VLMEVAL_RUN"
#: VLMEvalKit's root logger (``vlmeval.smp.log.ROOT_LOGGER_NAME``); run.py logs under it.
VLMEVAL_LOGGER = "vlmeval"


def find_run_py() -> Path:
    """VLMEvalKit's ``run.py``: from ``$JUDGECP_VLMEVAL_RUN``, else beside the ``vlmeval`` package."""
    env = os.environ.get(ENV_RUN)
    if env:
        path = Path(env).expanduser()
        if path.is_dir():
            path = path / "run.py"
        if not path.is_file():
            raise InputError(f"${ENV_RUN}={env}: no run.py there")
        return path.resolve()
    try:
        spec = importlib.util.find_spec("vlmeval")
    except (ImportError, ValueError):  # a broken or blocked vlmeval
        spec = None
    if spec is None or not spec.origin:
        require_vlmeval("`judgecp vlmeval`")
        raise InputError("cannot locate the vlmeval package")  # pragma: no cover - require raised
    candidate = Path(spec.origin).resolve().parent.parent / "run.py"
    if candidate.is_file():
        return candidate
    raise InputError(
        f"VLMEvalKit is installed at {Path(spec.origin).parent} but its run.py is not beside it "
        f"(a non-editable install does not ship run.py): set ${ENV_RUN} to your checkout's run.py"
    )


_hooked = False


def watch_mcq_dataset(dataset: Any) -> bool:
    """For a VLMEvalKit multiple-choice dataset (``TYPE == "MCQ"``): capture its option letters.

    Marks the dataset for the ``-lp`` models and wraps the dataset object's
    ``build_prompt`` so every prompt it builds is registered with its row's
    index and option letters (the model only sees the message). Returns
    whether the dataset was one.
    """
    name = getattr(dataset, "dataset_name", None)
    if not isinstance(name, str) or getattr(dataset, "TYPE", None) != "MCQ" or spec_for(name) is not None:
        return False
    mark_mcq(name)
    if getattr(dataset, "judgecp_watched", False):
        return True
    original = dataset.build_prompt

    @functools.wraps(original)
    def build_prompt(line: Any, *args: Any, **kwargs: Any) -> Any:
        message = original(line, *args, **kwargs)
        if not isinstance(line, int):
            register_prompt(name, message, line)
        return message

    dataset.build_prompt = build_prompt
    dataset.judgecp_watched = True
    return True


def install_sidecar_hook() -> None:
    """Wrap ``vlmeval.inference.infer_data``: the run folder for the sidecars, multiple-choice capture."""
    global _hooked
    if _hooked:
        return
    import vlmeval.inference as vi

    original = vi.infer_data

    @functools.wraps(original)
    def infer_data(*args: Any, **kwargs: Any) -> Any:
        work_dir = kwargs.get("work_dir")
        model_name = kwargs.get("model_name")
        if kwargs.get("dataset") is not None:
            watch_mcq_dataset(kwargs["dataset"])
        if work_dir is None or model_name is None:
            return original(*args, **kwargs)
        with run_context(work_dir, model_name):
            return original(*args, **kwargs)

    vi.infer_data = infer_data
    _hooked = True


def prepare() -> Registration:
    """Registration and hooks, as the launcher does them (for scripts that call run.py's main)."""
    from judgecp.adapters.vlmeval.discovery import defer_to_launcher

    defer_to_launcher()  # the startup hook stands aside: errors here are the launcher's to report
    require_vlmeval("`judgecp vlmeval`")
    info = register()
    install_sidecar_hook()
    return info


def launch(argv: Sequence[str]) -> int:
    """Run VLMEvalKit's ``run.py`` with ``argv`` after registering judgecp."""
    run_py = find_run_py()
    prepare()
    return run_script(run_py, argv)


def run_script(run_py: Path, argv: Sequence[str]) -> int:
    """Execute ``run_py`` as ``__main__``; its exit status, or 1 when VLMEvalKit logged errors.

    ``run.py`` logs a model or dataset that failed (an API model without a
    key, an unknown dataset, a judgecp dataset whose evaluation had no usable
    row or refused a calibrator), skips it and exits 0; a CI job would pass
    with nothing evaluated. Errors logged under VLMEvalKit's ``vlmeval``
    loggers make the exit status 1, with one line naming the first. A judgecp
    :class:`~judgecp.base.errors.InputError` that ``run.py`` logs with its
    traceback is logged without it: its message is the one line.
    """
    # Counted where each record starts (Logger.handle), for the run only: VLMEvalKit's loggers do not
    # propagate, and a handler on its "vlmeval" logger would make its setup_logger() skip the console.
    errors: list[str] = []
    original = logging.Logger.handle

    def handle(logger: logging.Logger, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR and (record.name == VLMEVAL_LOGGER
                                                or record.name.startswith(VLMEVAL_LOGGER + ".")):
            errors.append((record.getMessage().splitlines() or [record.levelname])[0])
            if record.exc_info and isinstance(record.exc_info[1], InputError):
                record.exc_info = record.exc_text = None  # judgecp's own error: its one line says it all
        original(logger, record)

    logging.Logger.handle = handle  # type: ignore[method-assign]
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(run_py), *argv]
    sys.path.insert(0, str(run_py.parent))
    code = 0
    try:
        runpy.run_path(str(run_py), run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        logging.Logger.handle = original  # type: ignore[method-assign]
    if code == 0 and errors:
        print(f"judgecp: error: VLMEvalKit logged {len(errors)} error(s) and skipped that work; "
              f"first: {errors[0]}", file=sys.stderr)
        return 1
    return code
