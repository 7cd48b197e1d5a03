"""lm-evaluation-harness integration: judge models, Likert task glue, discovery.

Importing this package does not import lm-eval (or torch). :func:`register`
makes the judgecp models known to lm-eval's registry; the startup hook
installed with ``judgecp[lm-eval]`` calls it as soon as lm-eval's registry is
imported (``JUDGECP_LM_EVAL_AUTOLOAD=0`` turns that off), and adds
:func:`tasks_path` to every ``TaskManager``'s include path, so plain
``lm_eval --model hf-judge --tasks mllm_judge_cp`` works.
"""

from __future__ import annotations

from pathlib import Path

import judgecp.tasks
from judgecp.base.errors import require

#: lm-eval model name -> "module:Class", registered lazily (imported on first use).
MODELS = {
    "hf-judge": "judgecp.adapters.lm_eval.models:HFJudgeLM",
    "hf-multimodal-judge": "judgecp.adapters.lm_eval.models:HFMultimodalJudgeLM",
    "vllm-judge": "judgecp.adapters.lm_eval.vllm_models:VLLMJudge",
    "vllm-vlm-judge": "judgecp.adapters.lm_eval.vllm_models:VLLMVLMJudge",
    "openai-judge": "judgecp.adapters.lm_eval.api_models:OpenAIJudge",
    "judgecp-replay": "judgecp.adapters.lm_eval.replay:ReplayJudgeLM",
}

#: Environment switch of the startup hook ("0", "false", "no" or "off" disables it).
AUTOLOAD_ENV = "JUDGECP_LM_EVAL_AUTOLOAD"


def tasks_path() -> Path:
    """The folder of judgecp's lm-eval tasks (for ``--include_path``)."""

    return Path(judgecp.tasks.__file__).resolve().parent


#: Name of the model answering in this process (set by the judgecp models; PARC records carry it).
_model_name: list[str] = []


def set_model_name(name: str | None) -> None:
    """Remember the model's name for the records built in this process (the last one set wins)."""
    _model_name[:] = [str(name)] if name else []


def model_name() -> str:
    """The model's name set by a judgecp model, or ``"model"`` (a stock lm-eval model sets none)."""
    return _model_name[0] if _model_name else "model"


def register() -> list[str]:
    """Register the judgecp models with lm-eval (idempotent); returns the names added.

    lm-eval's built-in models are registered first: ``get_model`` only loads
    them when its registry is empty, so registering ours into an empty
    registry would hide ``--model hf``.
    """

    require("lm_eval", "lm-eval", "the lm-eval integration")
    import lm_eval.models  # noqa: F401  (registers the built-ins)
    from lm_eval.api.registry import model_registry

    added = []
    for name, target in MODELS.items():
        if name not in model_registry:
            model_registry.register(name, target=target)
            added.append(name)
    return added
