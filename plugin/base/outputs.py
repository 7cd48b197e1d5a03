"""Outputs that can be trusted: files written atomically, folders built aside, paths checked before any work.

Every file judgecp writes goes through :func:`atomic_writer` (or
:func:`atomic_write_text`): the bytes go to a temporary file in the target's
own folder, are flushed and synced, and replace the target in one
``os.replace``. Until then the previous file is intact; on any exception
(``KeyboardInterrupt`` and ``SIGTERM`` included) the temporary file is removed.
A reader never sees half a file, and an interrupted command leaves the old
output as it was.

Folder outputs (``report -o DIR``, ``parc build -o DIR``, ``vlmeval
build-tsv --out DIR``) are built in a temporary folder by
:func:`building_directory` and moved into place at the end: a new folder is
renamed into place in one step; into an existing folder each top-level entry
the build made replaces its namesake (the entry named ``last``, e.g. the
manifest, goes last), and anything else already in the folder (the input
reports ``make report`` keeps there) stays. Signals are held during those
few renames.

:func:`check_outputs` refuses, before any work and in one line naming the
flag and the path, an output that resolves to an input (symlinks followed,
hard links by ``os.path.samefile``), two outputs that are one file, a
directory where a file is wanted (or a file where a folder is wanted), and a
missing or unwritable parent folder.

Temporary names start with ``.`` and contain :data:`TEMP_MARK`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from judgecp.base.errors import InputError

#: In the name of every temporary file or folder judgecp writes (tests look for leftovers by it).
TEMP_MARK = ".judgecp-tmp"

PathLike = str | os.PathLike[str]


def _temp_name(name: str) -> str:
    return f".{name}.{secrets.token_hex(4)}{TEMP_MARK}"


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (where the platform allows opening a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows, or a folder we may rename in but not open
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync on folders
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: PathLike, mode: str = "w", *, encoding: str | None = "utf-8",
                  newline: str | None = None) -> Iterator[IO[Any]]:
    """A handle whose contents replace ``path`` in one step when the ``with`` block ends normally.

    ``mode`` is ``"w"`` (text, ``encoding``/``newline`` as for :func:`open`)
    or ``"wb"``. A symlink is written through (its target is replaced, as
    ``open(path, "w")`` would); an existing file keeps its permission bits, a
    new one gets the umask's, as with :func:`open`. On any exception the
    temporary file is removed and the previous ``path`` is left as it was.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_writer writes with mode 'w' or 'wb', not {mode!r}")
    target = Path(os.path.realpath(path))
    tmp = target.parent / _temp_name(target.name)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:  # the message names the file asked for, not judgecp's temporary one
        raise _about(exc, path) from None
    try:
        try:
            mode_bits = stat.S_IMODE(os.stat(target).st_mode)
        except OSError:
            mode_bits = None
        if mode_bits is not None:
            os.chmod(tmp, mode_bits)
        handle: IO[Any]
        if mode == "wb":
            handle = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding=encoding, newline=newline)
        fd = -1  # the handle owns it now
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is not None and TEMP_MARK in os.fspath(exc.filename):
            raise _about(exc, path) from None
        raise
    _fsync_dir(target.parent)


def _about(exc: OSError, path: PathLike) -> OSError:
    """The same error, naming ``path`` (the file a command was asked to write) instead of a temporary file."""
    return type(exc)(exc.errno, exc.strerror or str(exc), os.fspath(path))


def atomic_write_text(path: PathLike, text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_writer`)."""
    with atomic_writer(path, "w", encoding=encoding) as handle:
        handle.write(text)


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_writer`)."""
    with atomic_writer(path, "wb", encoding=None) as handle:
        handle.write(data)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends (main thread only; elsewhere a no-op).

    For the few renames that put a built folder in place: an interruption
    then lands before or after them, never between two of them.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def remember(signum: int, frame: Any) -> None:
        received.append(signum)

    for sig in previous:
        signal.signal(sig, remember)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(received):
            signal.raise_signal(signum)


@contextlib.contextmanager
def building_directory(path: PathLike, *, last: str | None = None) -> Iterator[Path]:
    """A temporary folder to build ``path`` in; moved into place when the ``with`` block ends normally.

    A new ``path`` (its parents are created) is built as a hidden sibling and
    renamed into place in one step. An existing folder is built inside
    itself, in a hidden folder, and each top-level entry of the build then
    replaces its namesake (``last`` goes last, so a reader that sees it sees
    the rest); the folder's other entries stay. On any exception the
    temporary folder is removed and ``path`` is left as it was.
    """
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_dir():
        raise InputError(f"{path}: exists and is not a folder")
    fresh = not target.exists()
    if fresh:
        target.parent.mkdir(parents=True, exist_ok=True)
    tmp = (target.parent if fresh else target) / _temp_name(target.name)
    tmp.mkdir()
    try:
        yield tmp
        with signals_held():
            if fresh and not target.exists():
                os.rename(tmp, target)
            else:
                _move_entries(tmp, target, last)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        inside = os.fspath(exc.filename) if isinstance(exc, OSError) and exc.filename is not None else ""
        if isinstance(exc, OSError) and inside.startswith(os.fspath(tmp)):  # name the output, not the build folder
            raise type(exc)(
                exc.errno, exc.strerror or str(exc), os.fspath(path) + inside[len(os.fspath(tmp)) :]
            ) from None
        raise
    _fsync_dir(target.parent)


def _move_entries(built: Path, target: Path, last: str | None) -> None:
    entries = sorted(built.iterdir(), key=lambda p: (p.name == last, p.name))
    old = target / _temp_name("replaced")
    old.mkdir()
    try:
        for entry in entries:
            dest = target / entry.name
            if dest.is_symlink() or dest.exists():
                os.rename(dest, old / entry.name)
            os.rename(entry, dest)
    finally:
        shutil.rmtree(old, ignore_errors=True)
    built.rmdir()


# -- checks before any work ----------------------------------------------------------------------


@dataclass(frozen=True)
class Folder:
    """An output that is a folder, for :func:`check_outputs`; ``entries``: the names the build replaces in it."""

    path: PathLike | None
    entries: Sequence[str] = ()


def _same(a: PathLike, b: PathLike) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def _inside(inner: PathLike, outer: PathLike) -> bool:
    return Path(os.path.realpath(inner)).is_relative_to(os.path.realpath(outer))


def _writable_folder(flag: str, path: PathLike, folder: Path) -> None:
    if not folder.exists():
        raise InputError(f"{flag} {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise InputError(f"{flag} {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: cannot write in the folder {folder} (permission denied)")


def _check_file(flag: str, path: PathLike) -> None:
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{flag} {path}: a directory; give a file name")
    if str(path).endswith(("/", os.sep)) or os.path.basename(os.fspath(path)) in ("", ".", ".."):
        raise InputError(f"{flag} {path}: names a folder; give a file name (an output file's folder must exist, "
                         "an output folder is created)")
    resolved = Path(os.path.realpath(target))
    _writable_folder(flag, path, resolved.parent)
    if resolved.exists() and not os.access(resolved, os.W_OK):
        raise InputError(f"{flag} {path}: the file is read-only")


def _check_folder(flag: str, path: PathLike) -> None:
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise InputError(f"{flag} {path}: a file, not a folder; give a folder name")
    resolved = Path(os.path.realpath(target))
    if resolved.is_dir():
        _writable_folder(flag, path, resolved)
        return
    ancestor = resolved.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    _writable_folder(flag, path, ancestor)


def check_outputs(outputs: Mapping[str, PathLike | Folder | None], *,
                  inputs: Iterable[PathLike | tuple[str, PathLike] | None] = ()) -> None:
    """Refuse, before any work, outputs that cannot be written or would replace an input.

    ``outputs`` maps a flag (``"-o"``, ``"--json"``) to a file path, or to a
    :class:`Folder`; ``None`` values are skipped. ``inputs``: paths, or ``(what, path)`` pairs where ``what``
    names the flag in a message (``"--join"``; a bare path, or ``"the input"``: a positional argument). Each problem is
    an
    :class:`~judgecp.base.errors.InputError` of one line naming the flag and the path.

    One rule for every command: an output *file* goes into a folder that exists (a missing folder is
    refused, and so is a path that names a folder, ``out/``); an output *folder* is created, with its parents.
    """
    named = [item if isinstance(item, tuple) else ("the input", item) for item in inputs if item is not None]
    given = [str(i) for _, i in named if str(i) != ""]
    label = {str(i): what for what, i in named}
    files: list[tuple[str, PathLike]] = []
    for flag, value in outputs.items():
        if value is None:
            continue
        if isinstance(value, Folder):
            if value.path is None:
                continue
            _check_folder(flag, value.path)
            for name in value.entries:
                entry = Path(value.path) / name
                hit = next((i for i in given if _inside(i, entry)), None)
                if hit is not None:
                    raise InputError(f"{flag} {value.path}: writing {name} there would replace the input {hit}")
            continue
        _check_file(flag, value)
        hit = next((i for i in given if _same(value, i)), None)
        if hit is not None:
            what = "" if label[hit] == "the input" else f" ({label[hit]})"
            raise InputError(f"{flag} {value}: the same file as the input {hit}{what}; choose another output")
        twin = next((f for f, p in files if _same(value, p)), None)
        if twin is not None:
            raise InputError(f"{flag} {value}: the same file as {twin}; give two different files")
        files.append((flag, value))


__all__ = [
    "TEMP_MARK",
    "Folder",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_writer",
    "building_directory",
    "check_outputs",
    "signals_held",
]
