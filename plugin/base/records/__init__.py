"""The judgecp record (``judgecp.record/1``): schema, builders, checks, reading and writing.

See :mod:`judgecp.base.records.schema` for the fields and docs/records.md for the
full description; ``record.schema.json`` is the JSON Schema.
"""

from judgecp.base.records.schema import (
    FIELDS,
    SCHEMA,
    SHAPES,
    choice_record,
    complete,
    flatten,
    json_logprobs,
    json_number,
    judge_output,
    likeliest,
    pair_record,
    parse_judge_output,
    problem,
    schema_path,
    score_record,
)

__all__ = [
    "FIELDS",
    "SCHEMA",
    "SHAPES",
    "choice_record",
    "complete",
    "flatten",
    "json_logprobs",
    "json_number",
    "judge_output",
    "likeliest",
    "pair_record",
    "parse_judge_output",
    "problem",
    "schema_path",
    "score_record",
]
