"""judgecp in VLMEvalKit: judge datasets, logprob-capturing models, a launcher, post-hoc metrics.

Importing this package does not import VLMEvalKit (nor torch): the modules
that need it import it when called. Entry points:

* ``judgecp vlmeval <run.py args>`` (:mod:`.launcher`), or in Python
  :func:`register` then VLMEvalKit's ``run.py``;
* ``judgecp vlmeval build-tsv`` (:mod:`.builders`): the judge TSVs from the
  public releases;
* ``judgecp evaluate --format vlmeval PRED.xlsx`` (:mod:`.evaluation`).

See docs/vlmeval.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register() -> Any:
    """Register judgecp's datasets and models into VLMEvalKit (imports it; idempotent)."""
    from judgecp.adapters.vlmeval.register import register as _register  # lazy: imports VLMEvalKit

    return _register()
