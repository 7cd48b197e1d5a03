"""What the VLMEvalKit startup hook does after each watched VLMEvalKit module loads.

Called by the startup hook (:mod:`judgecp.adapters.vlmeval._startup_hook`,
installed as ``_judgecp_vlmeval_hook``) in any Python process of the
environment, e.g. VLMEvalKit's own ``python run.py`` or
``scripts/summarize.py``:

* ``vlmeval.dataset`` loaded: judgecp's dataset classes join its registries
  (:func:`~judgecp.adapters.vlmeval.register.register_datasets`), so
  ``run.py --data MLLMJudge_CP`` builds judgecp's dataset instead of
  VLMEvalKit's generic VQA dataset, and the summary finds judgecp's primary
  metrics;
* ``vlmeval.config`` loaded: the ``-lp`` models and ``$JUDGECP_VLMEVAL_MODELS``
  (:func:`~judgecp.adapters.vlmeval.register.register_models`);
* ``vlmeval.inference`` loaded: the sidecar and multiple-choice capture
  (:func:`~judgecp.adapters.vlmeval.hooks.install_sidecar_hook`).

Under the launcher (``judgecp vlmeval``) the launcher registers everything
itself and reports its errors; the hook then stands aside
(:func:`defer_to_launcher`).
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.vlmeval.hooks import install_sidecar_hook

_deferred = False


def defer_to_launcher() -> None:
    """The launcher registers (and reports errors) itself: the hook does nothing from now on."""
    global _deferred
    _deferred = True


def after_dataset_registry(module: Any) -> None:
    if _deferred:
        return
    from judgecp.adapters.vlmeval.register import register_datasets  # lazy: imports VLMEvalKit

    register_datasets(dataset_module=module)


def after_model_registry(module: Any) -> None:
    if _deferred:
        return
    from judgecp.adapters.vlmeval.register import register_models  # lazy: imports VLMEvalKit

    register_models()


def after_inference(module: Any) -> None:
    if _deferred:
        return

    install_sidecar_hook()
