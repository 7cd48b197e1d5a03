"""The hooks judgecp puts into a VLMEvalKit run: the sidecar's run folder and multiple-choice prompt capture.

``vlmeval.inference.infer_data`` is wrapped once (:func:`install_sidecar_hook`), by the launcher or by
the startup hook (:mod:`~judgecp.adapters.vlmeval.discovery`); VLMEvalKit is imported only when it is.
"""

from __future__ import annotations

import functools
from typing import Any

from judgecp.adapters.vlmeval.runtime import mark_mcq, register_prompt, run_context
from judgecp.adapters.vlmeval.specs import spec_for

_hooked = False


def watch_mcq_dataset(dataset: Any) -> bool:
    """For a VLMEvalKit multiple-choice dataset (``TYPE == "MCQ"``): capture its option letters.

    Marks the dataset for the ``-lp`` models and wraps the dataset object's
    ``build_prompt`` so every prompt it builds is registered with its row's
    index and option letters (the model only sees the message). Returns
    whether the dataset was one.
    """
    name = getattr(dataset, "dataset_name", None)
    if not isinstance(name, str) or getattr(dataset, "TYPE", None) != "MCQ" or spec_for(name) is not None:
        return False
    mark_mcq(name)
    if getattr(dataset, "judgecp_watched", False):
        return True
    original = dataset.build_prompt

    @functools.wraps(original)
    def build_prompt(line: Any, *args: Any, **kwargs: Any) -> Any:
        message = original(line, *args, **kwargs)
        if not isinstance(line, int):
            register_prompt(name, message, line)
        return message

    dataset.build_prompt = build_prompt
    dataset.judgecp_watched = True
    return True


def install_sidecar_hook() -> None:
    """Wrap ``vlmeval.inference.infer_data``: the run folder for the sidecars, multiple-choice capture."""
    global _hooked
    if _hooked:
        return
    import vlmeval.inference as vi

    original = vi.infer_data

    @functools.wraps(original)
    def infer_data(*args: Any, **kwargs: Any) -> Any:
        work_dir = kwargs.get("work_dir")
        model_name = kwargs.get("model_name")
        if kwargs.get("dataset") is not None:
            watch_mcq_dataset(kwargs["dataset"])
        if work_dir is None or model_name is None:
            return original(*args, **kwargs)
        with run_context(work_dir, model_name):
            return original(*args, **kwargs)

    vi.infer_data = infer_data
    _hooked = True
