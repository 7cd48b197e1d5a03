"""The ``judgecp`` command line: a thin layer over the Python API.

Core commands: ``evaluate`` (the repeated-split study of any kind),
``records`` (any supported input as ``judgecp.record/1`` JSONL),
``methods`` (the registered methods and controllers) and ``bench``. Harness
adapters add theirs through the ``register_commands`` hook. An error meant
for the user (:class:`~judgecp.base.errors.InputError`, a missing optional
dependency, a bad flag value) is printed on one line and the exit status is 2.
Commands run with one BLAS/OpenMP thread per process (:mod:`judgecp.base.threads`;
the user's ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` or ``OPENBLAS_NUM_THREADS``
kept), and work that runs past a few seconds writes a progress line on
stderr (:mod:`judgecp.base.progress`; ``--quiet`` turns it off). A library's
Python warning is one line at the end (:func:`summarised_warnings`). SIGINT
ends a command with exit status 130 and SIGTERM with 143, after one line
``judgecp: interrupted``; outputs are written atomically
(:mod:`judgecp.base.outputs`), so the previous output is then intact. An
unexpected ``OSError`` (a file that vanished or became unreadable midway)
is one line naming the path, exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import re
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import judgecp.base.progress as progress
from judgecp.base.errors import InputError, MissingDependencyError
from judgecp.base.plugins import get_plugin_manager
from judgecp.base.threads import pinned, runs_a_model
from judgecp.base.version import __version__
from judgecp.cli import (
    bench_fitted,
    calibrators,
    commands,
    estimate,
    evaluate,
    gate,
    nightly,
    parc_build,
    report,
)

#: Exit statuses of an interrupted command (128 + the signal's number, as a shell reports them).
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Parser(argparse.ArgumentParser):
    """argparse, with a bad flag value as one line naming the flag (an :class:`InputError`, exit 2).

    Subcommands' parsers are of this class too (argparse's default ``parser_class``).
    Other usage errors (a missing argument, an unknown flag) keep argparse's usage text, the
    subcommand's own (an unknown flag of ``judgecp evaluate`` shows evaluate's usage, not the
    top-level one), with "did you mean" for a mistyped flag (``--methd``: ``--methods``), also when
    the typo left a required flag out (``calibrate --ouput x``: ``-o/--output`` is required).
    """

    _given: tuple[str, ...] = ()

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        self._given = tuple(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            chosen(self, parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        found = re.fullmatch(r"argument ([^:]+): (.*)", message, flags=re.S)
        if found is None:
            super().error(message + flag_hints(self, self._given))
        flag, problem = found.group(1), " ".join(found.group(2).split())
        raise InputError(f"{flag} {problem}" if problem.startswith("must ") else f"{flag}: {problem}")


def chosen(parser: argparse.ArgumentParser, parsed: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)command's parser that ``parsed`` went through last (``judgecp bench fitted``: fitted's)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(parsed, action.dest, None)
            if isinstance(name, str) and name in action.choices:
                return chosen(action.choices[name], parsed)
    return parser


def flag_hints(parser: argparse.ArgumentParser, given: Sequence[str]) -> str:
    """``; did you mean --methods for --methd?`` for each flag of ``given`` the parser does not know but
    has one close to (a prefix argparse accepts is known)."""
    known = [flag for flag in parser._option_string_actions if flag.startswith("--")]
    hints = []
    for arg in given:
        if arg == "--":
            break
        flag = arg.split("=", 1)[0]
        if not flag.startswith("--") or flag in known or any(k.startswith(flag) for k in known):
            continue
        close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
        if close:
            hints.append(f"did you mean {close[0]} for {flag}?")
    return "; " + "; ".join(dict.fromkeys(hints)) if hints else ""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main thread is, so that cleanup runs as for Ctrl-C."""


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


#: Characters of a path an error line shows (a 3 MB item id in a file name is cut, its length said).
PATH_SHOWN = 240


def _os_error_line(exc: OSError) -> str:
    where = ": ".join(_clip_path(str(f)) for f in (exc.filename, exc.filename2) if f is not None)
    what = exc.strerror or type(exc).__name__
    return f"{where}: {what}" if where else f"{what} ({exc})"


#: Characters of an error message shown (a message that quotes a huge cell is cut in the middle).
MESSAGE_SHOWN = 4000


def _clip_message(text: str) -> str:
    if len(text) <= MESSAGE_SHOWN:
        return text
    return f"{text[: MESSAGE_SHOWN - 600]} ... {text[-400:]} (a message of {len(text)} characters, cut)"


def _clip_path(text: str) -> str:
    if len(text) <= PATH_SHOWN:
        return text
    return f"{text[: PATH_SHOWN // 2]}...{text[-PATH_SHOWN // 4:]} (a path of {len(text)} characters)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="judgecp", description="How far can a model judge be trusted? Conformal reliability metrics for judges."
    )
    parser.add_argument("--version", action="version", version=f"judgecp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    evaluate.add_parser(sub)
    calibrators.add_parser(sub)  # calibrate, apply
    gate.add_parser(sub)
    estimate.add_parser(sub)
    nightly.add_parser(sub)  # compare, plan, select
    commands.add_records(sub)
    commands.add_example(sub)
    commands.add_methods(sub)
    report.add_parser(sub)
    bench = commands.add_bench(sub)
    bench_fitted.add_parser(bench)  # judgecp bench fitted
    parc_build.add_parser(sub)  # judgecp parc build
    get_plugin_manager().hook.register_commands(commands=sub, benchmarks=bench)
    return parser


@contextmanager
def progress_lines(args: argparse.Namespace) -> Iterator[None]:
    """Progress on stderr for work past a few seconds (judgecp.base.progress): off with --quiet, from the start with
    --progress."""
    forced = bool(getattr(args, "progress", False))
    with progress.enabled(forced or not getattr(args, "quiet", False), delay=0.0 if forced else progress.DELAY):
        yield


def warning_origin(filename: str) -> str:
    """The package a warning came from: the folder after site-packages, else the file's name."""
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return Path(parts[parts.index(marker) + 1]).stem
    return Path(filename).stem or "python"


@contextmanager
def summarised_warnings() -> Iterator[None]:
    """Python warnings of a command (scipy's, scikit-learn's, ...): one line each on stderr at its end, with a
    count, not Python's two-line form with a source line. The filters stay as they are: a warning that an
    ``error`` filter turns into an exception still raises (pytest's ``filterwarnings = error``)."""
    seen: dict[tuple[str, str, str], int] = {}

    def note(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        text = (str(message).strip().splitlines() or [""])[0]
        key = (warning_origin(filename), category.__name__, text)
        seen[key] = seen.get(key, 0) + 1

    with warnings.catch_warnings():
        warnings.showwarning = note
        try:
            yield
        finally:
            for (origin, category, text), count in seen.items():
                times = f" ({count} times)" if count > 1 else ""
                print(f"judgecp: note: {origin} warned{times}: {category}: {text}", file=sys.stderr)


#: How many :func:`main` calls are running (the console script's early signal handler leaves SIGINT to them).
running = 0


def main(argv: Sequence[str] | None = None) -> int:
    global running
    argv = list(sys.argv[1:] if argv is None else argv)
    running += 1
    try:
        with _sigterm_raises():
            args = build_parser().parse_args(argv)
            if runs_a_model((args.command, getattr(args, "bench", None))):  # a harness: its own threads and output
                return int(args.func(args))
            with summarised_warnings(), pinned(), progress_lines(args):
                return int(args.func(args))
    except (InputError, MissingDependencyError) as exc:
        print(f"judgecp: error: {_clip_message(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print("judgecp: interrupted", file=sys.stderr)
        return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
    except OSError as exc:  # the last resort: the checks before work should have said it already
        print(f"judgecp: error: {_os_error_line(exc)}", file=sys.stderr)
        return 2
    except MemoryError:  # an input too large for the memory this process may use (a limit, a huge file)
        print("judgecp: error: out of memory: the input is too large for the memory this process may use "
              "(a memory limit, or a file far larger than it looks)", file=sys.stderr)
        return 2
    finally:
        running -= 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
