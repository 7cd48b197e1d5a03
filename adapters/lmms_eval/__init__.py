"""lmms-eval integration (phase 1 prototype): judge models, judge tasks, discovery.

Importing this package imports neither lmms-eval nor torch. lmms-eval 0.7.3
finds judgecp in two ways, with nothing typed:

* **models**: the ``lmms_eval.models`` entry points of this distribution
  point at :func:`model_manifests` (lmms-eval's ``ModelManifest`` objects,
  ``models/registry_v2.py``), loaded by lmms-eval after its built-ins;
* **tasks**: the startup hook installed with judgecp (``judgecp-lmms-eval.pth``,
  :mod:`judgecp.adapters.lmms_eval._startup_hook`) adds :func:`tasks_path` to
  every ``TaskManager`` that includes lmms-eval's own tasks
  (``JUDGECP_LMMS_EVAL_AUTOLOAD=0`` turns it off; ``--include_path
  $(judgecp lmms-eval-tasks-path)`` does the same by hand).

``LMMS_EVAL_PLUGINS`` is not used: in lmms-eval 0.7.3 it adds ``pkg.tasks``
to the include path only after the task manager was built, so the tasks
are not found (docs/lmms_eval.md).

Settings (``--metadata`` in lm-eval) have no command-line flag in lmms-eval:
they come from ``JUDGECP_LMMS_EVAL_METADATA`` (JSON, the same keys as lm-eval's
``--metadata``: ``alpha``, ``methods``, ``splits``, ``data_dir``, ...), read
over each task's own YAML ``metadata``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: lmms-eval model id -> "module.Class" (lmms-eval's class-path form), all simple models.
MODELS = {
    "judgecp-replay": "judgecp.adapters.lmms_eval.replay.ReplayJudge",
    "judgecp-hf": "judgecp.adapters.lmms_eval.models.HFJudge",
}

#: Environment switch of the startup hook ("0", "false", "no" or "off" disables it).
AUTOLOAD_ENV = "JUDGECP_LMMS_EVAL_AUTOLOAD"
#: JSON settings for every judgecp task of a run (lm-eval's ``--metadata``).
METADATA_ENV = "JUDGECP_LMMS_EVAL_METADATA"


def tasks_path() -> Path:
    """The folder of judgecp's lmms-eval tasks (for ``--include_path``)."""
    return Path(__file__).resolve().parent / "tasks"


def model_manifests() -> list[Any]:
    """The ``lmms_eval.models`` entry point's payload: one ``ModelManifest`` per judgecp model."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return [ModelManifest(model_id=name, simple_class_path=path) for name, path in MODELS.items()]
