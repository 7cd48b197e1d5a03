"""judgecp.images and judgecp.datasources without a harness: documents' images and where documents come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgecp import datasources
from judgecp.errors import InputError


def test_local_dir_comes_from_metadata_first_then_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "env"
    other.mkdir()
    monkeypatch.setenv("JUDGECP_TEST_DIR", str(other))
    assert datasources.local_dir(str(tmp_path), "JUDGECP_TEST_DIR") == tmp_path
    assert datasources.local_dir(None, "JUDGECP_TEST_DIR") == other
    monkeypatch.delenv("JUDGECP_TEST_DIR")
    assert datasources.local_dir(None, "JUDGECP_TEST_DIR") is None
    with pytest.raises(InputError, match="metadata data_dir='/no/such' is not a directory"):
        datasources.local_dir("/no/such", "JUDGECP_TEST_DIR")
    monkeypatch.setenv("JUDGECP_TEST_DIR", "/no/such")
    with pytest.raises(InputError, match="JUDGECP_TEST_DIR='/no/such'"):
        datasources.local_dir(None, "JUDGECP_TEST_DIR")


def test_parquet_files_of_a_hub_copy_and_jsonl_rows(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "cfg").mkdir()
    for name in ("data/test-00000-of-00002.parquet", "data/test-00001-of-00002.parquet", "data/train-0.parquet",
                 "cfg/test.parquet"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in datasources.parquet_files(tmp_path, "test", "nope")] == [
        "test.parquet", "test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]
    assert [p.name for p in datasources.parquet_files(tmp_path, "test", "cfg")] == ["test.parquet"]  # the config's folder
    (tmp_path / "test.jsonl").write_text(json.dumps({"a": 1}) + "\n[1, 2]\nnot json\n", encoding="utf-8")
    rows, where = datasources.rows_of(tmp_path, hub_id="org/name", split="test")
    assert rows == [{"a": 1}, None, None] and where.endswith("test.jsonl")  # a line that is no object: None, counted by the task
    assert datasources.text(None) is None and datasources.text(4) == "4" and datasources.text("0") == "0"


def test_as_dataset_dict_gives_every_document_every_field() -> None:
    pytest.importorskip("datasets")
    table = datasources.as_dataset_dict([{"id": "a", "x": "1"}, {"id": "b", "exclude": "malformed"}])["test"]
    assert table.column_names == ["id", "x", "exclude"] and table[1]["x"] is None
    with pytest.raises(InputError, match="no documents for t"):
        datasources.as_dataset_dict([], what="t")


def test_images_fall_back_to_a_counted_placeholder(tmp_path: Path) -> None:
    image_mod = pytest.importorskip("PIL.Image")
    from judgecp import images

    good = tmp_path / "good.png"
    image_mod.new("L", (5, 4), 7).save(good)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    assert images.check_image_file(good) == "" and images.check_image_file(tmp_path / "none.png") == "file not found"
    assert images.check_image_file(bad).startswith("UnidentifiedImageError")
    doc = {"id": "d1", "image_path": str(good)}
    img = images.load_image(doc)
    assert img.mode == "RGB" and img.size == (5, 4) and not images.failed(doc)
    broken = {"id": "d2", "image_refs": [str(good), str(bad)]}
    loaded = images.load_images(broken)
    assert [i.size for i in loaded] == [(5, 4), images.PLACEHOLDER_SIZE] and images.failed(broken)  # the count kept
    left_out = {"id": "d3", "exclude": "open_question"}
    assert [i.size for i in images.load_images(left_out)] == [images.PLACEHOLDER_SIZE] and not images.failed(left_out)
    flagged = {"id": "d4", "image_path": str(good), "image_error": "file not found"}
    assert images.load_image(flagged).size == images.PLACEHOLDER_SIZE and images.failed(flagged)


def test_images_from_a_registered_table_decode_only_when_judged(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    image_mod = pytest.importorskip("PIL.Image")
    from judgecp import images

    path = tmp_path / "a.png"
    image_mod.new("RGB", (3, 2), (1, 2, 3)).save(path)
    table = datasets.Dataset.from_dict({"image": [str(path), None]}).cast_column("image", datasets.Image())
    images.register_table("t", table, ["image"])
    first = {"id": "r0", "image_refs": [images.table_ref("t", 0, "image")]}
    assert images.load_images(first)[0].getpixel((0, 0)) == (1, 2, 3) and not images.failed(first)
    empty = {"id": "r1", "image_refs": [images.table_ref("t", 1, "image")]}
    assert images.load_images(empty)[0].size == images.PLACEHOLDER_SIZE and images.failed(empty)
