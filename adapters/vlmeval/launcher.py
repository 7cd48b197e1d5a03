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

Before ``run.py`` starts, the launcher checks what would only fail after the
whole inference (:func:`check_run`): a judgecp dataset run by a model that
records no logprobs (use its ``-lp`` twin), and ``--use-vllm`` with a
capturing model. While it runs, VLMEvalKit's own noise is kept out of the
user's view (:func:`vlmeval_logging`): its "no .env file" error, and the
tracebacks of the errors it logs and skips (they stay in VLMEvalKit's log
file, ``<work-dir>/logs/``); a traceback that ends ``run.py`` is one line
and exit status 1, as for a logged error.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import runpy
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.api_judge import JudgeCPOpenAI
from judgecp.adapters.vlmeval.discovery import defer_to_launcher
from judgecp.adapters.vlmeval.hooks import install_sidecar_hook
from judgecp.adapters.vlmeval.models import LP_SUFFIX
from judgecp.adapters.vlmeval.register import (
    JudgeCPLogprobs,
    Registration,
    build_lp,
    register,
    require_vlmeval,
)
from judgecp.adapters.vlmeval.specs import ENSEMBLE_PREFIX, spec_for
from judgecp.base.errors import InputError, MissingDependencyError

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


def prepare() -> Registration:
    """Registration and hooks, as the launcher does them (for scripts that call run.py's main)."""

    defer_to_launcher()  # the startup hook stands aside: errors here are the launcher's to report
    require_vlmeval("`judgecp vlmeval`")
    info = register()
    install_sidecar_hook()
    return info


def launch(argv: Sequence[str]) -> int:
    """Run VLMEvalKit's ``run.py`` with ``argv`` after registering judgecp and checking ``argv``."""
    run_py = find_run_py()
    with vlmeval_logging() as log, warnings.catch_warnings():
        for message, category in HARMLESS_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=category)
        info = prepare()
        for warning in check_run(argv, dataset_classes=info.dataset_classes):
            print(f"judgecp: warning: {warning}", file=sys.stderr)
        return run_script(run_py, argv, log)


#: Python warnings of every run that say nothing about it (docs/vlmeval.md, "Expected noise"):
#: transformers 4.57 on VLMEvalKit's use of ``AutoModelForVision2Seq`` (DOCLING and others), and
#: VLMEvalKit's note that a model's keyword arguments become its generation config.
HARMLESS_WARNINGS: tuple[tuple[str, type[Warning]], ...] = (
    (r"The class `AutoModelForVision2Seq` is deprecated", FutureWarning),
    (r"Following kwargs received: .*, will use as generation config", UserWarning),
)


# -- before run.py: what would fail only after the whole inference ---------------------------


def judgecp_dataset(name: str) -> bool:
    """Whether ``name`` is one of judgecp's datasets (their evaluation needs logprob records)."""
    return spec_for(name) is not None or name.startswith(ENSEMBLE_PREFIX)


#: What ``supported_VLM`` entries (and ``--config`` model classes) that capture logprobs build.
CAPTURING: tuple[Callable[..., Any], ...] = (build_lp, JudgeCPLogprobs, JudgeCPOpenAI)
CAPTURING_CLASSES = ("JudgeCPLogprobs", "JudgeCPOpenAI")


@dataclass
class RunPlan:
    """The models and datasets a ``run.py`` command line names (``--model``, ``--data`` or
    ``--config``): each model with its ``--config`` entry (None without one), judgecp's datasets."""

    models: dict[str, Mapping[str, Any] | None] = field(default_factory=dict)
    datasets: list[str] = field(default_factory=list)
    mode: str = "all"
    use_vllm: bool = False
    config: str | None = None


def run_plan(argv: Sequence[str], dataset_classes: Sequence[str] = ()) -> RunPlan | None:
    """What ``argv`` asks ``run.py`` for; None when it cannot be read here (``run.py`` says why).

    ``dataset_classes``: judgecp's dataset classes (a ``--config`` data entry of one is judgecp's).
    """
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    parser.add_argument("--data", nargs="+", default=[])
    parser.add_argument("--model", nargs="+", default=[])
    parser.add_argument("--config")
    parser.add_argument("--mode", default="all")
    parser.add_argument("--use-vllm", action="store_true")
    try:
        args, _ = parser.parse_known_args(list(argv))
    except (argparse.ArgumentError, SystemExit):
        return None
    plan = RunPlan(mode=args.mode, use_vllm=args.use_vllm, config=args.config)
    if args.config is None:
        plan.models = dict.fromkeys(args.model)
        plan.datasets = [d for d in args.data if judgecp_dataset(d)]
        return plan
    try:
        config = json.loads(Path(args.config).read_text(encoding="utf-8"))
        models, data = config["model"], config["data"]
        plan.models = {str(k): v if isinstance(v, Mapping) else {} for k, v in models.items()}
        plan.datasets = [str(k) for k, v in data.items() if isinstance(v, Mapping) and (
            v.get("class") in dataset_classes or judgecp_dataset(str(v.get("dataset", k))))]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # not a JSON config judgecp can read: run.py reads (or refuses) it
    return plan


def captures(name: str, entry: Mapping[str, Any] | None,
             registry: Mapping[str, Any]) -> bool | None:
    """Whether the model ``name`` (its ``--config`` entry, or ``supported_VLM``'s) writes logprob
    records; None when it is unknown here (``run.py`` then says so)."""
    if entry is not None and entry.get("class"):
        return entry["class"] in CAPTURING_CLASSES
    if name not in registry:
        return None
    made = registry[name]
    return getattr(made, "func", made) in CAPTURING


def _builds(name: str, entry: Mapping[str, Any] | None, registry: Mapping[str, Any]) -> Any:
    """The class (or function) a model entry builds."""
    if entry is not None and entry.get("class"):
        return entry["class"]
    made = registry.get(name)
    return getattr(made, "func", made)


def check_run(argv: Sequence[str], registry: Mapping[str, Any] | None = None,
              dataset_classes: Sequence[str] = ()) -> list[str]:
    """Refuse (:class:`InputError`) what would fail only after the whole inference; the warnings.

    * a judgecp dataset with a model that records no logprobs: every row would end
      ``no_logprob_record`` and the dataset without metrics. Refused in ``--mode all`` (the
      default), naming the ``-lp`` twin; a warning with ``--mode infer`` (predictions only, on
      purpose); nothing with ``--mode eval`` (its error says it);
    * ``--use-vllm`` with a model that captures in its own ``generate`` (``-lp``,
      ``JudgeCPLogprobs``): vLLM generation has no logits to capture, and VLMEvalKit passes the
      flag to Qwen2-VL, Qwen2.5-VL and Llama-4 models only, so the others would ignore it silently.

    ``registry``: VLMEvalKit's ``supported_VLM`` (after registration) unless given.
    """
    plan = run_plan(argv, dataset_classes)
    if plan is None:
        return []
    if registry is None:
        from vlmeval.config import supported_VLM

        registry = supported_VLM
    if plan.use_vllm:
        local = [m for m, e in plan.models.items() if captures(m, e, registry)
                 and _builds(m, e, registry) not in (JudgeCPOpenAI, "JudgeCPOpenAI")]
        if local:
            raise InputError(f"--use-vllm: {local[0]} captures logprobs in the model's own "
                             "generate and vLLM generation has none to capture: run without "
                             "--use-vllm")
    if not plan.datasets or plan.mode == "eval":
        return []
    plain = [m for m, e in plan.models.items() if captures(m, e, registry) is False]
    if not plain:
        return []
    model, datasets = plain[0], ", ".join(plan.datasets)
    if plan.config is not None:
        fix = (f'a "{model}{LP_SUFFIX}" entry or '
               f'{{"class": "JudgeCPLogprobs", "base_model": "{model}"}} in the config')
    elif getattr(_builds(model, None, registry), "is_api", False):
        fix = ("an OpenAI-compatible endpoint with top_logprobs through JudgeCPOpenAI "
               "(docs/vlmeval.md, section 6)")
    else:
        fix = f"--model {model}{LP_SUFFIX}, its capturing twin"
    if plan.mode == "infer":
        return [f"{model} records no logprobs: its predictions on {datasets} will give judgecp no "
                f"metrics (use {fix})"]
    raise InputError(f"{model} records no logprobs, so {datasets} would end without metrics after "
                     f"the whole inference (no_logprob_record on every row): use {fix}, or "
                     "--mode infer for the predictions only")


# -- while run.py runs: VLMEvalKit's logging -------------------------------------------------


#: VLMEvalKit's ``load_env`` logs this on the root logger at every import when its checkout has
#: no ``.env`` (API keys); judgecp's models need none.
ENV_FILE_ERROR = "Did not detect the .env file at"


def _is_vlmeval(record: logging.LogRecord) -> bool:
    return record.name == VLMEVAL_LOGGER or record.name.startswith(VLMEVAL_LOGGER + ".")


def vlmeval_log_file() -> str | None:
    """The log file ``run.py`` writes (``<work-dir>/logs/<eval id>_<time>.log``), once set up."""
    for handler in logging.getLogger(VLMEVAL_LOGGER).handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return None


@dataclass
class VLMEvalLog:
    """What VLMEvalKit logged during a launch: the first line of each error, in order."""

    errors: list[str] = field(default_factory=list)


@contextmanager
def vlmeval_logging() -> Iterator[VLMEvalLog]:
    """VLMEvalKit's logging during a launch: errors counted, the noise kept off the console.

    Errors logged under VLMEvalKit's ``vlmeval`` loggers are counted (:func:`run_script`'s exit
    status). On the console, not in VLMEvalKit's log file: a logged error's traceback is left
    out and the line says where it is (judgecp's own :class:`InputError` has none anywhere: its
    message is the one line); VLMEvalKit's "no .env file" error is dropped. Counted where each
    record starts (``Logger.handle``), for the launch only: VLMEvalKit's loggers do not
    propagate, and a handler on its ``vlmeval`` logger would make its ``setup_logger()`` skip
    the console.
    """
    log = VLMEvalLog()
    original_handle, original_emit = logging.Logger.handle, logging.StreamHandler.emit

    def handle(logger: logging.Logger, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR and logger.name == "root" \
                and str(record.msg).startswith(ENV_FILE_ERROR):
            return
        if record.levelno >= logging.ERROR and _is_vlmeval(record):
            log.errors.append((record.getMessage().splitlines() or [record.levelname])[0])
            if record.exc_info and isinstance(record.exc_info[1], InputError):
                record.exc_info = record.exc_text = None
        original_handle(logger, record)

    def emit(handler: logging.StreamHandler[Any], record: logging.LogRecord) -> None:
        if record.exc_info and _is_vlmeval(record) and not isinstance(handler, logging.FileHandler):
            where = vlmeval_log_file() or "VLMEvalKit's log file"
            line = logging.makeLogRecord(record.__dict__)
            line.exc_info = line.exc_text = None
            line.msg, line.args = f"{record.getMessage()} [traceback in {where}]", None
            record = line
        original_emit(handler, record)

    logging.Logger.handle = handle  # type: ignore[method-assign]
    logging.StreamHandler.emit = emit  # type: ignore[method-assign, assignment]
    try:
        yield log
    finally:
        logging.Logger.handle = original_handle  # type: ignore[method-assign]
        logging.StreamHandler.emit = original_emit  # type: ignore[method-assign]


def _traceback_to_log_file(exc: BaseException) -> str | None:
    """Append ``exc``'s traceback to VLMEvalKit's log file; its path (None: no file yet)."""
    where = vlmeval_log_file()
    if where is None:
        return None
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        with open(where, "a", encoding="utf-8") as fh:
            fh.write("judgecp vlmeval: run.py stopped with\n" + text)
    except OSError:
        return None
    return where


def run_script(run_py: Path, argv: Sequence[str], log: VLMEvalLog | None = None) -> int:
    """Execute ``run_py`` as ``__main__``; its exit status, or 1 when VLMEvalKit logged errors or
    stopped.

    ``run.py`` logs a model or dataset that failed (an API model without a key, an unknown
    dataset, a judgecp dataset whose evaluation had no usable row or refused a calibrator),
    skips it and exits 0; a CI job would pass with nothing evaluated. Errors logged under
    VLMEvalKit's ``vlmeval`` loggers make the exit status 1, with one line naming the first. An
    exception that ends ``run.py`` (a ``--config`` model that does not build: ``run.py`` builds
    those outside its per-dataset ``try``) is the same: one line, exit status 1, the traceback in
    VLMEvalKit's log file; judgecp's own :class:`InputError` keeps exit status 2.
    """
    if log is None:
        with vlmeval_logging() as own:
            return run_script(run_py, argv, own)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(run_py), *argv]
    sys.path.insert(0, str(run_py.parent))
    code = 0
    try:
        runpy.run_path(str(run_py), run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except (InputError, MissingDependencyError):
        raise
    except Exception as exc:  # VLMEvalKit stopped: one line, as for the errors it logs and skips
        where = _traceback_to_log_file(exc)
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"judgecp: error: VLMEvalKit stopped: {type(exc).__name__}: {first}"
              + (f" [traceback in {where}]" if where else ""), file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    if code == 0 and log.errors:
        print(f"judgecp: error: VLMEvalKit logged {len(log.errors)} error(s) and skipped that "
              f"work; first: {log.errors[0]}", file=sys.stderr)
        return 1
    return code
