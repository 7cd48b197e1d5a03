"""``<name>-lp``: any local VLMEvalKit model, capturing score-token logprobs during its own generate.

:func:`attach_capture` wraps the ``generate(message, dataset)`` method of an
already built VLMEvalKit model object (the class is untouched). For a
judgecp judge dataset, the wrapped call runs the model's own ``generate``
inside a :class:`~judgecp.adapters.capture.generate.GenerateCapture` (the core's) and returns
``{"prediction": text, "extra_records": json}``, VLMEvalKit's structured
prediction (it keeps ``extra_records`` as a column of the prediction file);
the record also goes to the run's sidecar JSONL. For VLMEvalKit's own
multiple-choice datasets (marked by the launcher, :func:`~judgecp.adapters.
vlmeval.runtime.mark_mcq`) the option-letter logprobs are captured the same
way, but the prediction stays plain text (VLMEvalKit's own evaluation and
``--reuse`` see exactly what they would without judgecp) and the record goes
to the sidecar only. Any other dataset passes straight through.

Nothing here imports VLMEvalKit; :mod:`judgecp.adapters.vlmeval.register`
builds the models from its registry and calls :func:`attach_capture`.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from judgecp.adapters.capture.generate import GenerateCapture, generate_record
from judgecp.adapters.vlmeval.runtime import (
    PROMPTS,
    capture_target,
    deliver,
    is_mcq,
    register_prompt,
    row_letters,
)
from judgecp.adapters.vlmeval.specs import JudgeSpec, spec_for
from judgecp.base.errors import InputError
from judgecp.kinds import get_kind, kind_names

LP_SUFFIX = "-lp"


def find_tokenizer(model: Any) -> Any | None:
    """The tokenizer of a VLMEvalKit model wrapper: ``tokenizer``, ``processor.tokenizer``, ``processor``."""
    for path in ("tokenizer", "processor.tokenizer", "processor", "model.tokenizer", "tok"):
        obj: Any = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None and hasattr(obj, "convert_ids_to_tokens") and hasattr(obj, "get_vocab"):
            return obj
    return None


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
        kind = capture_target(spec, dataset)
        if kind is None or dataset is None:
            return inner(message=message, dataset=dataset)
        index, meta = PROMPTS.claim_entry(dataset, message)
        with GenerateCapture() as capture:
            text = inner(message=message, dataset=dataset)
        text = "" if text is None else str(text)
        if kind not in kind_names() or not get_kind(kind).reader.record_shape:
            raise InputError(f"{dataset}: no logprob record builder for kind {kind!r}")
        record = generate_record(capture.calls, tok, kind, scale=spec.scale if spec is not None else None,
                                 letters=row_letters(meta, spec))
        return deliver(record, text, spec=spec, dataset=dataset, index=index, model=name)

    model.generate = types.MethodType(generate, model)
    custom_prompt = getattr(model, "build_prompt", None)
    if callable(custom_prompt):

        def build_prompt(self: Any, line: Any, *args: Any, **kwargs: Any) -> Any:
            message = custom_prompt(line, *args, **kwargs)
            dataset = kwargs.get("dataset", args[0] if args else None)
            if is_mcq(dataset):
                register_prompt(str(dataset), message, line)
            return message

        model.build_prompt = types.MethodType(build_prompt, model)
    model.judgecp_capture = True
    model.judgecp_name = name
    return model


def lp_name(base: str) -> str:
    return f"{base}{LP_SUFFIX}"
