"""judgecp.base.outputs: atomic files, folders built aside, output paths checked before any work.

Each test names a promise and breaks when it breaks: the previous file intact after any exception
(KeyboardInterrupt included), no temporary file left, permissions kept, symlinks written through;
a folder's other entries kept, the named entry moved last, nothing created on failure; every
refusal one line naming the flag and the path.
"""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import pytest

from judgecp.base.errors import InputError
from judgecp.base.outputs import (
    TEMP_MARK,
    Folder,
    atomic_write_bytes,
    atomic_write_text,
    atomic_writer,
    building_directory,
    check_outputs,
    signals_held,
)


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if TEMP_MARK in p.name]


def test_a_file_is_written_and_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    atomic_write_text(out, "first\n")
    assert out.read_text() == "first\n"
    atomic_write_text(out, "second\n")
    assert out.read_text() == "second\n" and not leftovers(tmp_path)
    atomic_write_bytes(out, b"\x00\x01")
    assert out.read_bytes() == b"\x00\x01"


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_an_exception_midway_leaves_the_previous_file(tmp_path: Path, error: BaseException) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text("old contents\n")
    with pytest.raises(type(error)), atomic_writer(out) as handle:
        handle.write("half of the new")
        assert leftovers(tmp_path)  # the new bytes go to a temporary file beside the target
        raise error
    assert out.read_text() == "old contents\n" and not leftovers(tmp_path)
    fresh = tmp_path / "new.jsonl"
    with pytest.raises(type(error)), atomic_writer(fresh) as handle:
        handle.write("x")
        raise error
    assert not fresh.exists() and not leftovers(tmp_path)


def test_permissions_are_kept_and_new_files_follow_the_umask(tmp_path: Path) -> None:
    out = tmp_path / "shared.json"
    out.write_text("{}")
    os.chmod(out, 0o640)
    atomic_write_text(out, "[]")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "fresh.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "fresh.json").stat().st_mode) == 0o644  # as open(path, "w") would


def test_a_symlink_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "runs" / "night1.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_new_folder_appears_only_complete(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "report"
    with building_directory(out, last="report.md") as build:
        (build / "figures").mkdir()
        (build / "figures" / "a.png").write_bytes(b"png")
        (build / "report.md").write_text("# report")
        assert not out.exists()
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == ["figures", "figures/a.png", "report.md"]
    assert not leftovers(tmp_path)


def test_an_existing_folder_keeps_its_other_entries_and_gets_the_named_one_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "report"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "stale.png").write_bytes(b"old figure")
    (out / "report.md").write_text("old report")
    (out / "likert.json").write_text("an input kept here by make report")
    renamed: list[str] = []
    real_rename = os.rename

    def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        renamed.append(Path(dst).name)
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with building_directory(out, last="report.md") as build:
        (build / "report.md").write_text("new report")
        (build / "figures").mkdir()
        (build / "figures" / "fresh.png").write_bytes(b"new figure")
        (build / "report.html").write_text("<html>")
    assert (out / "report.md").read_text() == "new report"
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["fresh.png"]  # the whole entry is replaced
    assert (out / "likert.json").read_text() == "an input kept here by make report"
    placed = [name for name in renamed if name in ("figures", "report.html", "report.md")]
    assert placed[-1] == "report.md"
    assert not leftovers(tmp_path)


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_a_failed_build_leaves_the_folder_as_it_was(tmp_path: Path, error: BaseException) -> None:
    out = tmp_path / "build"
    out.mkdir()
    (out / "manifest.json").write_text("old manifest")
    with pytest.raises(type(error)), building_directory(out, last="manifest.json") as build:
        (build / "manifest.json").write_text("new")
        (build / "images").mkdir()
        raise error
    assert [p.name for p in out.iterdir()] == ["manifest.json"] and (
        out / "manifest.json"
    ).read_text() == "old manifest"
    fresh = tmp_path / "never"
    with pytest.raises(type(error)), building_directory(fresh) as build:
        (build / "x").write_text("x")
        raise error
    assert not fresh.exists() and not leftovers(tmp_path)


def test_signals_wait_until_the_held_block_ends() -> None:
    order: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with signals_held():
            signal.raise_signal(signal.SIGINT)
            order.append("after the signal, still inside")
        order.append("never reached")
    assert order == ["after the signal, still inside"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# -- check_outputs -----------------------------------------------------------------------------------


def refused(outputs: dict[str, object], inputs: list[object], *needles: str) -> None:
    with pytest.raises(InputError) as err:
        check_outputs(outputs, inputs=inputs)  # type: ignore[arg-type]
    message = str(err.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)


def test_an_output_that_is_an_input_is_refused_however_it_is_spelled(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("id,label\n")
    (tmp_path / "link.csv").symlink_to(data)
    os.link(data, tmp_path / "hard.csv")
    (tmp_path / "sub").mkdir()
    for spelled in (data, tmp_path / "link.csv", tmp_path / "hard.csv", tmp_path / "sub" / ".." / "data.csv"):
        refused({"--json": str(spelled)}, [str(data)], "--json", str(spelled), "same file as the input")
    refused({"-o": tmp_path / "a.jsonl", "--json": tmp_path / "sub" / ".." / "a.jsonl"}, [data],
            "--json", "same file as -o")
    check_outputs({"-o": tmp_path / "a.jsonl", "--json": tmp_path / "a.json", "--x": None}, inputs=[data, None])


def test_folders_and_files_in_the_wrong_place_are_refused(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    refused({"--json": tmp_path}, [], "--json", "a directory")
    refused({"--json": tmp_path / "missing" / "r.json"}, [], "--json", "does not exist")
    refused({"--json": tmp_path / "file.txt" / "r.json"}, [], "--json", "not a folder")
    refused({"-o": Folder(tmp_path / "file.txt")}, [], "-o", "a file, not a folder")
    check_outputs({"-o": Folder(tmp_path / "new" / "deeper")})  # created when built


def test_a_folder_output_may_not_replace_an_input_inside_it(tmp_path: Path) -> None:
    out = tmp_path / "report"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "input.json").write_text("{}")
    (out / "likert.json").write_text("{}")
    check_outputs({"-o": Folder(out, ("report.md", "figures"))}, inputs=[out / "likert.json"])
    refused({"-o": Folder(out, ("report.md", "figures"))}, [out / "figures" / "input.json"],
            "-o", "writing figures there would replace the input")


@pytest.mark.skipif(
    os.geteuid() == 0, reason="root writes anywhere; tests/test_hostile_files.py checks it in a user namespace"
)
def test_an_unwritable_folder_or_read_only_file_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o555)
    (tmp_path / "ro.json").write_text("{}")
    os.chmod(tmp_path / "ro.json", 0o444)
    try:
        refused({"--json": locked / "r.json"}, [], "--json", "permission denied")
        refused({"-o": Folder(locked)}, [], "-o", "permission denied")
        refused({"--json": tmp_path / "ro.json"}, [], "--json", "read-only")
    finally:
        os.chmod(locked, 0o755)
