"""``<name>-lp``: any local VLMEvalKit model, capturing score-token logprobs during its own generate.

:func:`attach_capture` wraps the ``generate(message, dataset)`` method of an
already built VLMEvalKit model object (the class is untouched). For a
judgecp judge dataset, the wrapped call runs the model's own ``generate``
inside a :class:`~judgecp.adapters.vlmeval.capture.GenerateCapture` and returns
``{"prediction": text, "extra_records": json}``, VLMEvalKit's structured
prediction (it keeps ``extra_records`` as a column of the prediction file);
the record also goes to the run's sidecar JSONL. For any other dataset the
call passes straight through (the multiple-choice capture for VLMEvalKit's
own benchmarks slots in here when the core gains conformal sets).

Nothing here imports VLMEvalKit; :mod:`judgecp.adapters.vlmeval.register`
builds the models from its registry and calls :func:`attach_capture`.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Sequence
from typing import Any

from judgecp.adapters.vlmeval.capture import (
    GenerateCall,
    GenerateCapture,
    find_tokenizer,
    likert_record,
    prediction_sha1,
)
from judgecp.adapters.vlmeval.runtime import PROMPTS, append_record, sidecar_target
from judgecp.adapters.vlmeval.specs import JudgeSpec, spec_for
from judgecp.errors import InputError

LP_SUFFIX = "-lp"

#: How a record is built from the captured ``generate`` calls, per judge kind. A new kind
#: (pairwise verdicts A/B, PARC option letters) adds its builder here.
RecordBuilder = Callable[[Sequence[GenerateCall], Any, JudgeSpec], dict[str, Any]]
RECORD_BUILDERS: dict[str, RecordBuilder] = {
    "likert": lambda calls, tokenizer, spec: likert_record(calls, tokenizer, scale=spec.scale),
}


def attach_capture(
    model: Any,
    *,
    name: str,
    tokenizer: Any = None,
    specs: Callable[[str], JudgeSpec | None] = spec_for,
) -> Any:
    """Make ``model.generate`` capture judge logprobs; returns the same object.

    ``name`` is the model's VLMEvalKit name (recorded, and used for the
    sidecar when the launcher did not set the run). ``tokenizer`` defaults to
    the wrapper's ``tokenizer`` / ``processor.tokenizer`` / ``processor``.
    """
    if getattr(model, "is_api", False):
        raise InputError(
            f"{name}: API models cannot be wrapped (their requests carry no logprobs); "
            "use judgecp's OpenAI-compatible judge `JudgeCPOpenAI` (docs/vlmeval.md)"
        )
    if getattr(model, "judgecp_capture", False):
        return model
    tok = tokenizer if tokenizer is not None else find_tokenizer(model)
    if tok is None:
        raise InputError(
            f"{name}: cannot find the tokenizer of {type(model).__name__} (looked at tokenizer, "
            "processor.tokenizer, processor); pass tokenizer_path to JudgeCPLogprobs"
        )
    inner = model.generate

    def generate(self: Any, message: Any, dataset: str | None = None) -> Any:
        spec = specs(dataset) if dataset else None
        if spec is None:
            return inner(message=message, dataset=dataset)
        index = PROMPTS.claim(dataset, message)
        with GenerateCapture() as capture:
            text = inner(message=message, dataset=dataset)
        text = "" if text is None else str(text)
        builder = RECORD_BUILDERS.get(spec.kind)
        if builder is None:
            raise InputError(f"{dataset}: no logprob record builder for judge kind {spec.kind!r}")
        record = builder(capture.calls, tok, spec)
        record.update(index=index, dataset=dataset, model=name, prediction_sha1=prediction_sha1(text))
        assert dataset is not None
        target = sidecar_target(name, dataset)
        if target is not None and index is not None:
            append_record(target, record)
        return {"prediction": text, "extra_records": json.dumps(record, ensure_ascii=False, allow_nan=False)}

    model.generate = types.MethodType(generate, model)
    model.judgecp_capture = True
    model.judgecp_name = name
    return model


def lp_name(base: str) -> str:
    return f"{base}{LP_SUFFIX}"
