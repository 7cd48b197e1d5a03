"""Register judgecp's datasets and models into VLMEvalKit, without editing VLMEvalKit.

VLMEvalKit's registries are module-level objects that ``run.py`` reads at
call time, so appending to them in the same process is enough:

* datasets: each class is appended to ``vlmeval.dataset.DATASET_CLASSES``
  (``build_dataset``, ``DATASET_TYPE`` and ``status.json``'s reporter look
  there), its names to ``SUPPORTED_DATASETS``, and the class is set as an
  attribute of ``vlmeval.dataset`` so ``--config`` files can name it
  (``"class": "MLLMJudgeCP"``);
* models: for every ``supported_VLM`` entry ``<name>``, ``<name>-lp`` builds
  the same model and attaches the logprob capture
  (:func:`~judgecp.adapters.vlmeval.models.attach_capture`). For ``--config``
  files, ``vlmeval.vlm.JudgeCPLogprobs`` wraps any model class
  (``{"class": "JudgeCPLogprobs", "base_class": "DOCLING", ...}``) or entry
  (``"base_model": "..."``), and ``vlmeval.api.JudgeCPOpenAI`` is the
  OpenAI-compatible judge with top-logprobs;
* extra entries from ``$JUDGECP_VLMEVAL_MODELS``, a JSON file
  ``{name: {"class": "DOCLING", ...kwargs}}`` (a class of ``vlmeval.vlm`` or
  ``vlmeval.api``, or ``JudgeCPOpenAI``) or ``{name: {"base": "<entry>",
  ...kwargs}}`` (an existing entry with some arguments replaced, e.g. local
  weights), registered before the ``-lp`` names so they get one too.

Registration is idempotent. Besides the launcher, judgecp's startup hook
(:mod:`~judgecp.adapters.vlmeval.discovery`) registers the same way in any
process that imports VLMEvalKit, e.g. its own ``run.py`` and
``scripts/summarize.py``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.models import LP_SUFFIX, attach_capture, lp_name
from judgecp.base.errors import InputError, MissingDependencyError

ENV_MODELS = "JUDGECP_VLMEVAL_MODELS"


class VLMEvalKitMissing(MissingDependencyError):
    """VLMEvalKit is not importable (it is not on PyPI, so the hint is a clone)."""

    def __init__(self, purpose: str) -> None:
        self.package = "vlmeval"
        self.extra = "vlmeval"
        ImportError.__init__(
            self,
            f"VLMEvalKit (vlmeval) is not installed, and {purpose} needs it. It is not on PyPI: "
            "`git clone https://github.com/open-compass/VLMEvalKit` (checked: e8e78f05), then "
            "on a CPU machine `bash scripts/install_vlmeval_cpu.sh VLMEvalKit VENV` from a "
            "judgecp checkout (a venv with CPU torch, VLMEvalKit and judgecp; `pip install -e "
            "VLMEvalKit` would pull CUDA torch), with a GPU `pip install -e VLMEvalKit` and "
            "judgecp's vlmeval extra (docs/vlmeval.md, Install)",
        )


def require_vlmeval(purpose: str) -> Any:
    try:
        import vlmeval
        import vlmeval.config
        import vlmeval.dataset
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name == "vlmeval":
            raise VLMEvalKitMissing(purpose) from exc
        raise
    return vlmeval


@dataclass
class Registration:
    datasets: list[str] = field(default_factory=list)
    dataset_classes: list[str] = field(default_factory=list)
    extra_models: list[str] = field(default_factory=list)
    lp_models: int = 0


def register_datasets(info: Registration | None = None, dataset_module: Any = None) -> Registration:
    """judgecp's dataset classes into ``vlmeval.dataset``'s registries (``dataset_module``: that module, when
    the startup hook calls right after it loaded; nothing else of VLMEvalKit is imported then)."""
    info = info or Registration()
    if dataset_module is None:
        require_vlmeval("registering judgecp's datasets")
        import vlmeval.dataset

        dataset_module = vlmeval.dataset
    vd = dataset_module

    from judgecp.adapters.vlmeval.datasets import DATASET_CLASSES  # lazy: imports VLMEvalKit
    from judgecp.adapters.vlmeval.ensemble import dataset_class  # lazy: imports VLMEvalKit

    for cls in (*DATASET_CLASSES, dataset_class()):
        if cls not in vd.DATASET_CLASSES:
            vd.DATASET_CLASSES.append(cls)
        if hasattr(vd, "IMAGE_DATASET") and cls not in vd.IMAGE_DATASET:
            vd.IMAGE_DATASET.append(cls)
        for name in cls.supported_datasets():
            if name not in vd.SUPPORTED_DATASETS:
                vd.SUPPORTED_DATASETS.append(name)
            info.datasets.append(name)
        setattr(vd, cls.__name__, cls)
        if hasattr(vd, "__all__") and cls.__name__ not in vd.__all__:
            vd.__all__.append(cls.__name__)
        info.dataset_classes.append(cls.__name__)
    return info


def _model_class(name: str) -> Any:
    import vlmeval.api as va
    import vlmeval.vlm as vv

    for module in (vv, va):
        if hasattr(module, name):
            return getattr(module, name)
    raise InputError(f"${ENV_MODELS}: class {name!r} is neither in vlmeval.vlm nor in vlmeval.api")


def build_lp(base: str, **kwargs: Any) -> Any:
    """Build ``supported_VLM[base]`` and attach the logprob capture (the ``<base>-lp`` entries)."""
    if kwargs.get("use_vllm"):
        raise InputError(f"{lp_name(base)}: vLLM generation has no logits to capture; run without --use-vllm")
    kwargs.pop("use_vllm", None)
    from vlmeval.config import supported_VLM

    model = supported_VLM[base](**kwargs)
    return attach_capture(model, name=lp_name(base))


def JudgeCPLogprobs(
    base_class: str | None = None,
    base_model: str | None = None,
    tokenizer_path: str | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> Any:
    """Any VLMEvalKit model with logprob capture, for ``--config`` files.

    ``base_class`` names a class of ``vlmeval.vlm`` (built with ``kwargs``),
    ``base_model`` a ``supported_VLM`` entry (``kwargs`` override its
    arguments). ``tokenizer_path`` loads the tokenizer when the wrapper's own
    cannot be found.
    """
    if (base_class is None) == (base_model is None):
        raise InputError("JudgeCPLogprobs needs exactly one of base_class or base_model")
    if kwargs.pop("use_vllm", False):  # run.py --config --use-vllm: in every model's arguments
        raise InputError(f"{name or base_class or base_model}: JudgeCPLogprobs captures logprobs "
                         "in the model's own generate; vLLM generation has none: run without "
                         "--use-vllm")
    from vlmeval.config import supported_VLM
    if base_class is not None:
        model = _model_class(base_class)(**kwargs)
        label = name or f"{base_class}{LP_SUFFIX}"
    else:
        assert base_model is not None
        if base_model not in supported_VLM:
            raise InputError(f"JudgeCPLogprobs: base_model {base_model!r} is not in supported_VLM")
        model = supported_VLM[base_model](**kwargs)
        label = name or lp_name(base_model)
    tokenizer = None
    if tokenizer_path is not None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    return attach_capture(model, name=label, tokenizer=tokenizer)


def _extra_models(path: Path) -> dict[str, Any]:
    from vlmeval.config import supported_VLM

    from judgecp.adapters.vlmeval.api_judge import JudgeCPOpenAI  # lazy: imports VLMEvalKit

    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"${ENV_MODELS}={path}: cannot read a JSON object ({exc})") from exc
    if not isinstance(spec, dict):
        raise InputError(f"${ENV_MODELS}={path}: expected a JSON object of model entries")
    entries: dict[str, Any] = {}
    for name, cfg in spec.items():
        if not isinstance(cfg, dict):
            raise InputError(f"${ENV_MODELS}: entry {name!r} is not an object")
        cfg = dict(cfg)
        if "base" in cfg:
            base = cfg.pop("base")
            if base not in supported_VLM:
                raise InputError(f"${ENV_MODELS}: entry {name!r}: base {base!r} is not in supported_VLM")
            original = supported_VLM[base]
            entries[name] = partial(original.func, *original.args, **{**original.keywords, **cfg})
        elif "class" in cfg:
            cls_name = cfg.pop("class")
            cls = JudgeCPOpenAI if cls_name == "JudgeCPOpenAI" else _model_class(cls_name)
            entries[name] = partial(cls, **cfg)
        else:
            raise InputError(f"${ENV_MODELS}: entry {name!r} needs 'class' or 'base'")
    return entries


def register_models(info: Registration | None = None) -> Registration:
    info = info or Registration()
    require_vlmeval("registering judgecp's models")
    import vlmeval.api as va
    import vlmeval.vlm as vv
    from vlmeval.config import supported_VLM

    from judgecp.adapters.vlmeval.api_judge import JudgeCPOpenAI  # lazy: imports VLMEvalKit

    setattr(vv, "JudgeCPLogprobs", JudgeCPLogprobs)  # noqa: B010
    setattr(va, "JudgeCPOpenAI", JudgeCPOpenAI)  # noqa: B010
    extra = os.environ.get(ENV_MODELS)
    if extra:
        for name, entry in _extra_models(Path(extra)).items():
            supported_VLM[name] = entry
            info.extra_models.append(name)
    for name in list(supported_VLM):
        if name.endswith(LP_SUFFIX) or lp_name(name) in supported_VLM:
            continue
        func = getattr(supported_VLM[name], "func", None)
        if func is JudgeCPOpenAI:
            continue  # captures by itself
        supported_VLM[lp_name(name)] = partial(build_lp, name)
        info.lp_models += 1
    return info


def register() -> Registration:
    """Register judgecp's datasets and models into the imported VLMEvalKit (idempotent)."""
    info = register_datasets()
    return register_models(info)
