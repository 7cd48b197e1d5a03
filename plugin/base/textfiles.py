"""Text files judgecp reads whole or line by line, and the binary ones it refuses in one line.

A gzip-compressed, zip, numpy or pickle file (known by its first bytes), a
device (``/dev/zero``: endless bytes), or bytes that are not UTF-8 are one
:class:`~judgecp.base.errors.InputError` naming the file and what it is, never a
``UnicodeDecodeError`` or a ``MemoryError``.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

from judgecp.base.errors import InputError

#: The first bytes of files that are not text, and what they are (for the message that refuses one).
BINARY_MAGIC = ((b"\x1f\x8b", "a gzip-compressed file (decompress it first: gunzip)"),
                (b"PK\x03\x04", "a zip archive (an .npz, .xlsx or .zip file)"),
                (b"\x93NUMPY", "a numpy array file (.npy)"), (b"PAR1", "a Parquet file"),
                (b"BZh", "a bzip2-compressed file (decompress it first)"),
                (b"\xfd7zXZ\x00", "an xz-compressed file (decompress it first)"))


def not_text(path: str | Path, what: str = "a UTF-8 text file") -> InputError | None:
    """The error for a device (``/dev/zero``: endless bytes) or a file that is known binary by its first bytes
    (gzip, zip, numpy, ...), else ``None``."""
    try:
        mode = Path(path).stat().st_mode
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return InputError(f"{path}: a device, not a file")
        with Path(path).open("rb") as handle:
            head = handle.read(8)
    except OSError:
        return None  # the reader's own error says why
    found = next((name for magic, name in BINARY_MAGIC if head.startswith(magic)), None)
    if found is None and head.startswith(b"\x80") and len(head) > 1 and 2 <= head[1] <= 5:
        found = "a Python pickle"
    return None if found is None else InputError(f"{path}: {found}, not {what}")


def read_text(path: str | Path, what: str = "a UTF-8 text file") -> str:
    """A whole UTF-8 text file (a byte-order mark dropped, no newline translation); a binary or compressed
    file, or bytes that are not UTF-8, is one line naming the file."""
    p = Path(path)
    problem = not_text(p, what)
    if problem is not None:
        raise problem
    try:
        # No newline translation: a quoted "\r" in a cell stays one. utf-8-sig: a byte-order mark is dropped.
        return p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not {what} ({exc.reason} at byte {exc.start})") from None


def text_lines(path: str | Path, what: str = "a UTF-8 text file") -> Iterator[str]:
    """The lines of a UTF-8 text file, read one by one (a byte-order mark dropped); a binary or compressed
    file, or a line that is not UTF-8, is one line naming the file (and the line)."""
    p = Path(path)
    problem = not_text(p, what)
    if problem is not None:
        raise problem
    line_no = 0
    try:
        with p.open(encoding="utf-8-sig") as handle:
            for line_no, line in enumerate(handle, 1):  # noqa: B007 - line_no names the line a decode error is in
                yield line
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not {what} (line {line_no + 1}: {exc.reason})") from None


__all__ = ["BINARY_MAGIC", "not_text", "read_text", "text_lines"]
