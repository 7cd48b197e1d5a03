"""Reading judge outputs: every bad row is a counted exclusion, every bad file a clear error."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from judgecp.base.errors import InputError
from judgecp.base.scale import LikertScale
from judgecp.data import Fields, ScoreData
from judgecp.data.extraction import DEFAULT_FLOOR
from judgecp.kinds.reading import from_records, load

HEADER = "id,lp1,lp2,lp3,lp4,lp5,label,parsed"


def load_likert(path: Path, *, label: str | None = None, logprobs: str | None = None, id_column: str | None = None,
                parsed: str | None = None, group: str | None = None, joins: tuple[str, ...] | list[str] = (),
                features: str | None = None, **options: object) -> ScoreData:
    """The table flags of `judgecp evaluate` as the API takes them."""
    fields = Fields(label=label, id=id_column, logprobs=logprobs, prediction=parsed, group=group, joins=tuple(joins),
                    features=features)
    data = load(path, "likert", fields, **options)
    assert isinstance(data, ScoreData)
    return data


def good_rows(n: int = 20) -> list[str]:
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        lp = np.log(rng.dirichlet(np.ones(5)))
        out.append(f"r{i}," + ",".join(f"{v:.6f}" for v in lp) + f",{1 + i % 5},{1 + int(np.argmax(lp))}")
    return out


def write(tmp_path: Path, lines: list[str], name: str = "judge.csv") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def reasons(data: object) -> dict[str, int]:
    return dict(data.excluded.counts)  # type: ignore[attr-defined]


def test_auto_detects_columns(tmp_path: Path) -> None:
    d = load_likert(write(tmp_path, [HEADER, *good_rows()]))
    assert d.n == 20 and d.columns["label"] == "label" and d.columns["id"] == "id"
    assert d.columns["logprobs"] == ["lp1", "lp2", "lp3", "lp4", "lp5"]
    assert d.columns["parsed"] == "parsed"


def test_bad_rows_are_counted(tmp_path: Path) -> None:
    rows = good_rows()
    lp = "-1,-2,-3,-4,-5"
    bad = [
        f"b0,{lp},,1",  # label missing
        f"b1,{lp},four,1",  # label not numeric
        f"b2,{lp},6,1",  # off the scale
        f"b3,{lp},0,1",  # off the scale
        f"b4,{lp},3.5,1",  # not a label
        "b5,-1,nan,-3,-4,-5,3,1",  # NaN logprob
        "b6,-1,,-3,-4,-5,3,1",  # logprob missing
        "b7,-1,x,-3,-4,-5,3,1",  # logprob not numeric
        "b8,-1,inf,-3,-4,-5,3,1",  # +inf
        f"b9,{','.join([str(DEFAULT_FLOOR)] * 5)},3,-1",  # extraction found nothing
        f"b10,{lp},3,-1",  # judge's score unparsed
    ]
    d = load_likert(write(tmp_path, [HEADER, *rows, *bad]))
    assert d.n == 20
    assert reasons(d) == {
        "label_missing": 1,
        "label_not_numeric": 1,
        "label_off_scale": 3,
        "nan_logprob": 1,
        "logprob_missing": 1,
        "logprob_not_numeric": 1,
        "logprob_infinite": 1,
        "no_score_logprobs": 1,
        "parse_failure": 1,
    }
    assert d.n_read == 31
    assert d.excluded.examples["label_off_scale"] == ["b2", "b3", "b4"]


def test_neg_inf_is_floored_and_flagged(tmp_path: Path) -> None:
    d = load_likert(write(tmp_path, [HEADER, *good_rows(), "x,-inf,-0.1,-3,-4,-5,2,2"]))
    assert d.n == 21 and dict(d.flags.counts) == {"neg_inf_floored": 1}
    assert d.logprobs[-1, 0] == DEFAULT_FLOOR


def test_nan_can_be_floored_instead(tmp_path: Path) -> None:
    d = load_likert(write(tmp_path, [HEADER, *good_rows(), "x,nan,-0.1,-3,-4,-5,2,2"]), nan="floor", floor=-9.0)
    assert d.n == 21 and dict(d.flags.counts) == {"nan_floored": 1} and d.logprobs[-1, 0] == -9.0


def test_missing_and_extra_logprob_columns(tmp_path: Path) -> None:
    p = write(tmp_path, ["id,lp1,lp2,lp3,lp4,lp6,label", "a,-1,-2,-3,-4,-5,3"])
    with pytest.raises(InputError, match=r"no column for label\(s\) \[5\].*lp6"):
        load_likert(p, logprobs="lp*")
    p = write(tmp_path, ["id,lp1,lp2,lp3,lp4,label", "a,-1,-2,-3,-4,3"])
    with pytest.raises(InputError, match=r"no column for label\(s\) \[5\]"):
        load_likert(p, logprobs="lp*")
    with pytest.raises(InputError, match=r"numbered columns lp1..lp4 are a 1:4 scale; is --scale right"):
        load_likert(p)
    p = write(tmp_path, ["id,lp1,lp2,lp3,lp4,lp5,lp_extra,label", "a,-1,-2,-3,-4,-5,0,3"])
    with pytest.raises(InputError, match="lp_extra"):
        load_likert(p, logprobs="lp*")


def test_duplicate_ids(tmp_path: Path) -> None:
    rows = good_rows()
    rows.append(rows[3])
    with pytest.raises(InputError, match=r"duplicate ids in 'id': \['r3'\]"):
        load_likert(write(tmp_path, [HEADER, *rows]))


def test_empty_and_headless_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="empty"):
        load_likert(write(tmp_path, [""]))
    with pytest.raises(InputError, match="no rows"):
        load_likert(write(tmp_path, [HEADER]))
    with pytest.raises(InputError, match="no such file"):
        load_likert(tmp_path / "absent.csv")
    p = tmp_path / "binary.csv"
    p.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(InputError, match="UTF-8"):
        load_likert(p)


def test_all_rows_bad_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no usable records.*label_off_scale: 2"):
        load_likert(write(tmp_path, [HEADER, "a,-1,-2,-3,-4,-5,9,1", "b,-1,-2,-3,-4,-5,0,1"]))


def test_jsonl_with_logprob_objects_and_a_corrupted_line(tmp_path: Path) -> None:
    lines = [
        json.dumps(
            {"id": f"d{i}", "label": 1 + i % 5, "logprobs": {"1": -3.0, "2": -2.0, "3": -1.0, "4": -0.5, "5": -2.5}}
        )
        for i in range(10)
    ]
    lines.insert(4, '{"id": "broken", "label": 3, "logpro')  # a resume cut a line
    lines.append(json.dumps({"id": "nolp", "label": 3, "logprobs": {"1": -1.0}}))
    lines.append(json.dumps({"id": "null", "label": 3, "logprobs": None}))
    d = load_likert(write(tmp_path, lines, "out.jsonl"))
    assert d.n == 10
    assert reasons(d) == {"malformed_json_line": 1, "logprob_missing": 2}
    assert d.excluded.examples["malformed_json_line"] == ["line 5"]
    assert d.columns["logprobs"] == {"json": "logprobs"}


def test_join_adds_columns_by_id_and_prefix(tmp_path: Path) -> None:
    main = write(tmp_path, [HEADER, *good_rows()])
    extra = write(tmp_path, ["id,task,label"] + [f"r{i},{'ab'[i % 2]},9" for i in range(19)], "tasks.csv")
    d = load_likert(main, joins=[str(extra)], group="task")
    assert d.n == 19 and reasons(d) == {"group_missing": 1}  # r19 has no task
    assert sorted(set(d.field("task"))) == ["a", "b"]
    info = d.columns["joins"][0]
    assert info["matched"] == 19 and info["kept_from_main"] == ["label"]
    other = write(tmp_path, ["id,lp1,lp2,lp3,lp4,lp5"] + [f"r{i},-1,-2,-3,-4,-5" for i in range(20)], "judge2.csv")
    fused = load_likert(main, joins=[f"{other}:j2_"], features="j2_lp*", logprobs="lp*")
    assert fused.X.shape == (20, 10)


def test_join_with_duplicate_ids_is_an_error(tmp_path: Path) -> None:
    main = write(tmp_path, [HEADER, *good_rows()])
    extra = write(tmp_path, ["id,task", "r1,a", "r1,b"], "tasks.csv")
    with pytest.raises(InputError, match="duplicate id 'r1'"):
        load_likert(main, joins=[str(extra)])


def test_other_scale_and_logits(tmp_path: Path) -> None:
    """Raw logits work as well as logprobs: only differences matter after the softmax."""
    scale = LikertScale(0, 2)
    p = write(tmp_path, ["id,lg0,lg1,lg2,score", "a,2.0,5.0,1.0,1", "b,0.5,0.1,3.0,2"])
    d = load_likert(p, label="score", logprobs="lg*", scale=scale)
    with pytest.raises(InputError, match="score.*not labels of the scale 0:2"):
        load_likert(p, label="score", logprobs="*", scale=scale)
    assert d.n == 2 and d.parsed.tolist() == [1, 2] and math.isclose(d.labels[1], 2)


def test_rows_of_any_shape_in_memory() -> None:
    lp = {"1": -3.0, "2": -2.0, "3": -1.0, "4": -0.5, "5": -2.5}
    records = [
        {"id": "a", "label": 4, "logprobs": lp, "parsed": 4, "group": "chart", "flags": []},
        {"id": "b", "label": 2, "logprobs": lp, "parsed": 4, "group": "chart", "flags": ["missing_token"]},
        {"id": "c", "label": 3, "logprobs": None, "parsed": None, "group": "coco", "flags": ["no_score"]},
        {"id": "d", "label": 7, "logprobs": lp, "parsed": 4, "group": "coco", "flags": []},
    ]
    d = from_records(records, "likert", Fields(group="group"))
    assert isinstance(d, ScoreData)
    assert d.n == 2 and d.ids.tolist() == ["a", "b"]
    assert reasons(d) == {"no_score": 1, "label_off_scale": 1}
    assert dict(d.flags.counts) == {"missing_token": 1}
    assert d.field("group").tolist() == ["chart", "chart"]
    with pytest.raises(InputError, match="no usable records"):
        from_records([], "likert")


def test_xlsx_tables_read_like_csv(tmp_path: Path) -> None:
    """VLMEvalKit's default prediction format: the first sheet, header row first, blank rows skipped,
    missing cells as blanks, a damaged file a one-line error."""
    openpyxl = pytest.importorskip("openpyxl")
    from judgecp.data.tables import read_table

    book = openpyxl.Workbook()
    sheet = book.active
    for row in (["index", "prediction", "answer"], [1, "Score: 4", 4], [None, None, None], [2, "B", None]):
        sheet.append(row)
    path = tmp_path / "pred.xlsx"
    book.save(path)
    table = read_table(path)
    assert table.n_rows == 2 and table.names == ["index", "prediction", "answer"]
    assert [table.columns["prediction"][i] for i in range(2)] == ["Score: 4", "B"]
    assert table.columns["answer"][1] is None
    (tmp_path / "bad.xlsx").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="bad.xlsx: not a readable .xlsx file"):
        read_table(tmp_path / "bad.xlsx")
