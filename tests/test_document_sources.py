"""judgecp.data.images and judgecp.data.datasources without a harness: documents' images and where documents come
from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgecp.base.errors import InputError
from judgecp.data import datasources


def test_local_dir_comes_from_metadata_first_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    assert [p.name for p in datasources.parquet_files(tmp_path, "test", "cfg")] == [
        "test.parquet"
    ]  # the config's folder
    (tmp_path / "test.jsonl").write_text(json.dumps({"a": 1}) + "\n[1, 2]\nnot json\n", encoding="utf-8")
    rows, where = datasources.rows_of(tmp_path, hub_id="org/name", split="test")
    assert rows == [{"a": 1}, None, None] and where.endswith(
        "test.jsonl"
    )  # a line that is no object: None, counted by the task
    assert datasources.text(None) is None and datasources.text(4) == "4" and datasources.text("0") == "0"


def test_as_dataset_dict_gives_every_document_every_field() -> None:
    pytest.importorskip("datasets")
    table = datasources.as_dataset_dict([{"id": "a", "x": "1"}, {"id": "b", "exclude": "malformed"}])["test"]
    assert table.column_names == ["id", "x", "exclude"] and table[1]["x"] is None
    with pytest.raises(InputError, match="no documents for t"):
        datasources.as_dataset_dict([], what="t")


def test_images_fall_back_to_a_counted_placeholder(tmp_path: Path) -> None:
    image_mod = pytest.importorskip("PIL.Image")
    from judgecp.data import images

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
    from judgecp.data import images

    path = tmp_path / "a.png"
    image_mod.new("RGB", (3, 2), (1, 2, 3)).save(path)
    table = datasets.Dataset.from_dict({"image": [str(path), None]}).cast_column("image", datasets.Image())
    images.register_table("t", table, ["image"])
    first = {"id": "r0", "image_refs": [images.table_ref("t", 0, "image")]}
    assert images.load_images(first)[0].getpixel((0, 0)) == (1, 2, 3) and not images.failed(first)
    empty = {"id": "r1", "image_refs": [images.table_ref("t", 1, "image")]}
    assert images.load_images(empty)[0].size == images.PLACEHOLDER_SIZE and images.failed(empty)


def offline(*_: object, **__: object) -> None:
    """What datasets.load_dataset raises with HF_HUB_OFFLINE=1 (or no network)."""
    raise ConnectionError("Couldn't reach 'org/name' on the Hub (OfflineModeIsEnabled)")


def test_an_unreachable_hub_is_one_line_naming_the_local_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tasks' hub path (datasources.load_table, rows_of, hub_snapshot) with the hub unreachable."""
    datasets = pytest.importorskip("datasets", reason="the lm-eval extra (datasets) is not installed")
    hub = pytest.importorskip("huggingface_hub", reason="the lm-eval extra (huggingface_hub) is not installed")
    from huggingface_hub.errors import LocalEntryNotFoundError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets, "load_dataset", offline)
    for call in (lambda: datasources.load_table(None, hub_id="org/name", split="test", env_var="JUDGECP_X_DIR"),
                 lambda: datasources.rows_of(None, hub_id="org/name", split="test", env_var="JUDGECP_X_DIR")):
        with pytest.raises(InputError) as err:
            call()
        message = str(err.value)
        assert "\n" not in message and message.startswith("org/name: the Hugging Face hub cannot give this dataset")
        assert "(OfflineModeIsEnabled), HF_HUB_OFFLINE is set)" in message
        assert """--metadata '{"data_dir": "DIR"}' or JUDGECP_X_DIR=DIR""" in message

    def not_cached(**_: object) -> str:
        raise LocalEntryNotFoundError("Cannot find an appropriate cached snapshot folder for the specified revision")

    monkeypatch.setattr(hub, "snapshot_download", not_cached)
    with pytest.raises(
        InputError, match=r"^org/snap: .*\(Cannot find an appropriate cached snapshot.*JUDGECP_Y_DIR=DIR"
    ):
        datasources.hub_snapshot("org/snap", ["*"], env_var="JUDGECP_Y_DIR")


def test_other_errors_of_a_hub_load_pass_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets", reason="the lm-eval extra (datasets) is not installed")

    def bad_config(*_: object, **__: object) -> None:
        raise ValueError("BuilderConfig 'x' not found")

    monkeypatch.setattr(datasets, "load_dataset", bad_config)
    with pytest.raises(ValueError, match="BuilderConfig"):
        datasources.load_table(None, hub_id="org/name", split="test", config="x")
    assert datasources.is_hub_failure(TimeoutError()) and not datasources.is_hub_failure(KeyError("x"))


def test_parc_build_from_the_hub_offline_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`judgecp parc build mmbench` without the hub: datasets' own offline mode, no download, nothing written."""
    pytest.importorskip("datasets", reason="the lm-eval extra (datasets) is not installed")
    from judgecp.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: nothing to fall back on
    monkeypatch.setattr("datasets.config.HF_HUB_OFFLINE", True, raising=False)
    assert main(["parc", "build", "mmbench", "-o", str(tmp_path / "out")]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("judgecp: error: lmms-lab/MMBench_EN: the Hugging Face hub cannot give this dataset")
    assert "a folder with a copy of the hub's parquet files" in lines[0] and "docs/parc_build.md" in lines[0]
    assert not (tmp_path / "out").exists()
