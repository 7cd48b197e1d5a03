"""Every reader on hostile input: a clear error or a counted exclusion, never a traceback, never a lost row.

Hypothesis writes random files (random bytes, cut lines, random column
names, huge cells, random numbers and words in the cells) and reads them as
every kind. Allowed outcomes: an InputError (a clear, one-line message), or
data whose used rows plus counted exclusions are every row read. The two CSV
readers (pyarrow and the standard library's) must agree cell for cell.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgecp.base.errors import InputError
from judgecp.data import ChoiceData, PairData, ScoreData
from judgecp.data.tables import read_table
from judgecp.kinds.reading import from_table

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

NAMES = ["id", "label", "lp1", "lp2", "lp3", "lp4", "lp5", "prediction", "group", "pair_id", "order",
         "options", "logprobs", "exclude", "answer", "x", ""]
CELLS = st.one_of(
    st.sampled_from(["", "1", "3", "5", "0", "7", "2.5", "-1.2", "-0.3", "nan", "inf", "-inf", "four", "A", "B",
                     "tie", "fwd", "rev", "A,B", "[\"A\", \"B\"]", " 3", "True", "1e400", "-1e400"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet=string.printable, max_size=12),
)


def accounted(data: Any) -> None:
    """Used rows plus counted exclusions are every row read (for one-row-per-record kinds)."""
    if isinstance(data, (ScoreData, ChoiceData)):
        assert data.n + data.excluded.total == data.n_read, (data.n, data.excluded.to_json(), data.n_read)
    else:
        assert isinstance(data, PairData)
        assert data.n >= 1 and data.excluded.total <= data.n_read


def read_all_kinds(path: Path) -> None:
    try:
        table = read_table(path)
    except InputError:
        return
    for kind in ("likert", "pairwise", "mcq", "parc"):
        fresh = read_table(path)
        try:
            data = from_table(fresh, kind)
        except InputError as exc:
            assert str(exc) and "\n" not in str(exc).strip()
            continue
        accounted(data)
    assert table.n_rows >= 0


@SETTINGS
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".csv", ".tsv", ".jsonl", ".json"]))
def test_random_bytes(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"f{suffix}"
    path.write_bytes(data)
    read_all_kinds(path)


def csv_text(names: list[str], rows: list[list[str]], delimiter: str = ",") -> str:
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow(names)
    writer.writerows(rows)
    return out.getvalue()


TABLES = st.lists(st.sampled_from(NAMES), min_size=1, max_size=9, unique=True).flatmap(
    lambda names: st.tuples(
        st.just(names),
        st.lists(st.lists(CELLS, min_size=max(len(names) - 1, 0), max_size=len(names) + 1), max_size=12),
    )
)


@SETTINGS
@given(table=TABLES, cut=st.integers(min_value=0, max_value=40))
def test_random_csv_tables_and_cut_files(tmp_path: Path, table: tuple[list[str], list[list[str]]], cut: int) -> None:
    names, rows = table
    text = csv_text(names, rows)
    path = tmp_path / "t.csv"
    path.write_text(text[: max(len(text) - cut, 0)])  # a file cut mid-row by a crashed writer
    read_all_kinds(path)


@SETTINGS
@given(table=TABLES)
def test_both_csv_readers_agree(tmp_path: Path, table: tuple[list[str], list[list[str]]]) -> None:
    names, rows = table
    if "" in names:  # an empty header name: both readers keep it; nothing to compare beyond that
        names = [n or "blank" for n in names]
    path = tmp_path / "t.csv"
    path.write_text(csv_text(names, rows))
    try:
        fast = read_table(path)
    except InputError as exc:
        with pytest.raises(InputError) as slow_error:
            read_table(path, engine="python")
        assert str(slow_error.value) == str(exc)
        return
    slow = read_table(path, engine="python")
    assert fast.n_rows == slow.n_rows and fast.n_read == slow.n_read
    assert dict(fast.excluded.counts) == dict(slow.excluded.counts)
    for name in names:
        assert [c if c is not None else "" for c in fast.columns[name]] == list(slow.columns[name]), name


RECORD = st.fixed_dictionaries(
    {},
    optional={
        "schema": st.sampled_from(["judgecp.record/1", "judgecp.record/2", 1]),
        "shape": st.sampled_from(["score", "pair", "choice", "x"]),
        "id": st.one_of(st.text(max_size=4), st.integers(), st.none()),
        "label": st.one_of(CELLS, st.integers(-2, 8), st.lists(st.sampled_from("ABC"), max_size=3), st.none()),
        "logprobs": st.one_of(
            st.none(),
            st.text(max_size=6),
            st.dictionaries(
                st.sampled_from(["1", "2", "3", "4", "5", "A", "B", "C"]),
                st.one_of(st.floats(), st.none(), st.sampled_from(["nan", "-inf", "x"])),
            ),
        ),
        "prediction": st.one_of(st.none(), st.integers(0, 6), st.sampled_from("ABC")),
        "pair_id": st.one_of(st.none(), st.sampled_from(["p1", "p2", ""])),
        "order": st.sampled_from(["fwd", "rev", "up", None]),
        "options": st.one_of(st.none(), st.lists(st.sampled_from("ABCD"), max_size=4)),
        "flags": st.one_of(st.lists(st.sampled_from(["no_score", "missing_token"])), st.text(max_size=3)),
        "exclude": st.one_of(st.none(), st.sampled_from(["image_load_failed", ""])),
        "meta": st.one_of(st.none(), st.dictionaries(st.sampled_from(["actor", "id", "group"]), st.text(max_size=3))),
    },
)


@SETTINGS
@given(records=st.lists(st.one_of(RECORD, st.just("[1, 2, 3]"), st.just('{"id": "cut", "lab')), max_size=12))
def test_random_record_files(tmp_path: Path, records: list[Any]) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    read_all_kinds(path)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_one_huge_cell_costs_its_own_size(tmp_path: Path, suffix: str) -> None:
    """A 50 MB answer text in one row: read, counted or used, never a field-size error or n x 50 MB."""
    import tracemalloc

    huge = "x" * 50_000_000
    rows = [{"id": f"r{i}", "label": 1 + i % 5, "lp1": -1.0, "lp2": -2.0, "lp3": -3.0, "lp4": -4.0, "lp5": -5.0,
             "answer": huge if i == 3 else "short"} for i in range(200)]
    path = tmp_path / f"big{suffix}"
    if suffix == ".csv":
        path.write_text(csv_text(list(rows[0]), [[str(v) for v in r.values()] for r in rows]))
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tracemalloc.start()
    data = from_table(read_table(path), "likert")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert isinstance(data, ScoreData) and data.n == 200
    assert len(data.field("answer")[3]) == 50_000_000
    assert peak < 600_000_000  # a few copies of the 50 MB cell at most, not 200 x 50 MB


def test_arrow_reader_allocates_from_the_system_pool_and_restores_the_default(tmp_path: Path) -> None:
    """The CSV's columns live in the system allocator (freed memory goes back); the process's
    default pool is the same object after a read, and after a read pyarrow gave up on."""
    pa = pytest.importorskip("pyarrow")
    from judgecp.data.tables import ArrowColumn

    path = tmp_path / "rows.csv"
    path.write_text("id,label\n" + "".join(f"r{i},{i % 5 + 1}\n" for i in range(2000)), encoding="utf-8")
    before = pa.default_memory_pool()
    system_before = pa.system_memory_pool().bytes_allocated()
    table = read_table(path)
    assert type(table.columns["id"]) is ArrowColumn
    assert pa.system_memory_pool().bytes_allocated() > system_before  # the columns are the system pool's
    assert pa.default_memory_pool().backend_name == before.backend_name
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"id,label\nr1,\xff\xfe\n")  # not UTF-8: pyarrow gives up, the standard reader decides
    with pytest.raises(InputError):
        from_table(read_table(bad), "likert")
    assert pa.default_memory_pool().backend_name == before.backend_name


# -- every reader, more hostile: byte-order marks, huge numbers, deep nesting, harness files -----------
#
# Whatever the bytes, a reader gives an InputError (one line) or data whose rows are accounted for,
# and the file it read is byte for byte what it was.

BOM = b"\xef\xbb\xbf"
HUGE = st.one_of(st.sampled_from(["9" * 400, "-" + "9" * 400, "1e308", "-1e308", "4.9e-324", "1" + "0" * 5000]),
                 st.integers(min_value=10**300, max_value=10**310).map(str))


def nested(depth: int, leaf: Any = 1) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


def read_all_kinds_unchanged(path: Path) -> None:
    before = path.read_bytes()
    read_all_kinds(path)
    assert path.read_bytes() == before


@SETTINGS
@given(table=TABLES, bom=st.booleans(), huge=st.lists(HUGE, max_size=4), cut=st.integers(min_value=0, max_value=30),
       delimiter=st.sampled_from([",", "\t"]))
def test_csv_with_marks_huge_numbers_and_cuts(tmp_path: Path, table: tuple[list[str], list[list[str]]], bom: bool,
                                             huge: list[str], cut: int, delimiter: str) -> None:
    names, rows = table
    rows = [list(r) for r in rows]
    for i, number in enumerate(huge):  # huge numbers into random cells
        if rows and rows[i % len(rows)]:
            rows[i % len(rows)][i % len(rows[i % len(rows)])] = number
    text = csv_text(names, rows, delimiter).encode()
    path = tmp_path / ("t.csv" if delimiter == "," else "t.tsv")
    path.write_bytes((BOM if bom else b"") + text[: max(len(text) - cut, 0)])
    read_all_kinds_unchanged(path)


@SETTINGS
@given(records=st.lists(st.one_of(RECORD, st.just("[1, 2, 3]"), st.just('{"id": "cut", "lab')), max_size=10),
       bom=st.booleans(), depth=st.integers(min_value=1, max_value=6000), where=st.integers(min_value=0, max_value=10),
       huge=HUGE)
def test_records_with_marks_deep_nesting_and_huge_numbers(tmp_path: Path, records: list[Any], bom: bool, depth: int,
                                                          where: int, huge: str) -> None:
    lines = [(r if isinstance(r, str) else json.dumps(r)) for r in records]
    lines.insert(min(where, len(lines)), '{"id": "deep", "label": 3, "meta": {"x": ' + deep_text(depth) + "}}")
    lines.insert(min(where + 1, len(lines)), '{"id": "huge", "label": ' + huge + ', "logprobs": {"1": ' + huge + "}}")
    path = tmp_path / "r.jsonl"
    path.write_bytes((BOM if bom else b"") + "".join(line + "\n" for line in lines).encode())
    read_all_kinds_unchanged(path)


@SETTINGS
@given(data=st.binary(max_size=300), bom=st.booleans(), suffix=st.sampled_from([".csv", ".tsv", ".jsonl", ".json"]),
       depth=st.integers(min_value=0, max_value=3000))
def test_random_bytes_after_a_mark_or_inside_an_array(tmp_path: Path, data: bytes, bom: bool, suffix: str,
                                                     depth: int) -> None:
    path = tmp_path / f"f{suffix}"
    body = deep_text(depth).encode() if suffix == ".json" and depth else data
    path.write_bytes((BOM if bom else b"") + body)
    read_all_kinds_unchanged(path)


def lm_eval_sample(i: int, label: int) -> str:
    from judgecp.base.records import score_record

    record = score_record(f"doc{i}", label=str(label), prediction=label,
                          logprobs={str(k): -abs(k - label) - 0.1 for k in range(1, 6)})
    return json.dumps({"doc_id": i, "metrics": ["coverage_naive"], "coverage_naive": record, "resps": [["x"]]})


SAMPLE_LINE = st.one_of(
    st.builds(lm_eval_sample, st.integers(0, 30), st.integers(1, 5)),
    st.builds(lambda i, label, cut: lm_eval_sample(i, label)[:cut], st.integers(0, 30), st.integers(1, 5),
              st.integers(0, 200)),
    st.builds(lambda d: '{"doc_id": 1, "metrics": ["m"], "m": "' + deep_text(d) + '"}', st.integers(1, 5000)),
    st.builds(deep_text, st.integers(1, 5000)),
    st.text(max_size=40),
    st.just('{"doc_id": 2, "metrics": ["m"], "m": null}'),
)


@SETTINGS
@given(lines=st.lists(SAMPLE_LINE, max_size=14), bom=st.booleans())
def test_lm_eval_samples_reader(tmp_path: Path, lines: list[str], bom: bool) -> None:
    from judgecp.adapters.lm_eval.plugin import read_samples

    path = tmp_path / "samples_judge_2026-01-01T00-00-00.jsonl"
    path.write_bytes((BOM if bom else b"") + "".join(line.replace("\n", " ") + "\n" for line in lines).encode())
    before = path.read_bytes()
    try:
        batch = read_samples(path)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert batch.records and len(batch.records) + batch.excluded.total <= batch.n_read
        try:
            data = from_table(batch.table(), None)
        except InputError as exc:
            assert "\n" not in str(exc)
        else:
            accounted(data)
    assert path.read_bytes() == before


VLMEVAL_FIXTURE = Path(__file__).parent / "vlmeval" / "fixtures" / "clean"
CELL_EDITS = st.one_of(st.just(""), st.text(max_size=30), HUGE, st.sampled_from(["nan", "{'prediction': 3", "None"]),
                       st.builds(deep_text, st.integers(1, 3000)))


@pytest.mark.skipif(not VLMEVAL_FIXTURE.is_dir(), reason="the VLMEvalKit prediction fixtures are not in this checkout")
@SETTINGS
@given(edits=st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["index", "prediction", "extra_records",
                                                                      "answer", "category"]), CELL_EDITS), max_size=8),
       sidecar_lines=st.lists(st.one_of(st.text(max_size=30), st.builds(deep_text, st.integers(1, 4000)),
                                        st.just('{"id": "1", "schema": "judgecp.record/1"}')), max_size=5),
       drop=st.integers(0, 30), bom=st.booleans())
def test_vlmeval_prediction_reader(tmp_path: Path, edits: list[tuple[int, str, str]], sidecar_lines: list[str],
                                   drop: int, bom: bool) -> None:
    """A VLMEvalKit prediction file (TSV, as PRED_FORMAT=tsv writes it) with edited cells, a dropped row
    and a sidecar with junk lines; read without vlmeval installed."""
    pytest.importorskip("openpyxl")
    import csv

    from judgecp.adapters.vlmeval.plugin import read_prediction_file
    from judgecp.adapters.vlmeval.predictions import read_table as read_prediction_table

    source = next(VLMEVAL_FIXTURE.rglob("*_MLLMJudge_CP.xlsx"))
    columns, rows = read_prediction_table(source)
    rows = [dict(r) for i, r in enumerate(rows) if i != drop]
    for i, column, value in edits:
        if rows and column in columns:
            rows[i % len(rows)][column] = value
    run = tmp_path / "tiny-docling-lp" / "T1"
    run.mkdir(parents=True, exist_ok=True)
    path = run / "tiny-docling-lp_MLLMJudge_CP.tsv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        if bom:
            fh.write("\ufeff")
        writer = csv.DictWriter(fh, fieldnames=columns, delimiter="\t", quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows([{c: "" if r.get(c) is None else r.get(c) for c in columns} for r in rows])
    sidecar = run / "tiny-docling-lp_MLLMJudge_CP_lprecords.jsonl"
    original = next(VLMEVAL_FIXTURE.rglob("*_lprecords.jsonl")).read_text().splitlines()
    sidecar.write_text(
        "\n".join([*original[: len(original) // 2], *(s.replace("\n", " ") for s in sidecar_lines)]) + "\n"
    )
    before = (path.read_bytes(), sidecar.read_bytes())
    try:
        batch = read_prediction_file(path)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        try:
            data = from_table(batch.table(), None)
        except InputError as exc:
            assert "\n" not in str(exc)
        else:  # sidecar lines are counted too, but they are not rows of the prediction file
            rows_left_out = sum(n for reason, n in data.excluded.counts.items() if not reason.startswith("sidecar_"))
            assert data.n + rows_left_out == data.n_read, (data.n, data.excluded.to_json(), data.n_read)
    assert (path.read_bytes(), sidecar.read_bytes()) == before
