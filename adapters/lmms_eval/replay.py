"""``judgecp-replay`` for lmms-eval: serves recorded judge scores instead of running a model.

The lm-eval adapter's replay model (:class:`judgecp.adapters.lm_eval.replay.ReplayJudgeLM`)
on lmms-eval's model interface. lmms-eval's requests carry no document, only
``(context, continuation or generation settings, doc_to_visual, doc_id, task,
split)``: the document (and its ``id``, the recording's key) is looked up in
``self.task_dict[task][split][doc_id]``, which lmms-eval fills before it
sends requests. The answers are the lm-eval replay model's, computed by its
own methods on requests that carry the document (:class:`_WithDocument`).
``--model_args recording=PATH`` replays a recording; without it, the
synthetic recording of the ``judgecp_demo`` items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lmms_eval.api.model import lmms

from judgecp.adapters.lm_eval.replay import ReplayJudgeLM


@dataclass(frozen=True)
class _WithDocument:
    """An lm-eval-shaped request: ``args`` = (context, continuation or generation settings), ``doc``."""

    args: tuple[Any, ...]
    doc: Any


class ReplayJudge(lmms):  # type: ignore[misc]
    """Replays recorded judge scores (see the module docstring)."""

    is_simple = True

    def __init__(self, recording: str | None = None, **_ignored: Any) -> None:
        super().__init__()
        self._replay = ReplayJudgeLM(recording=recording)

    def _lm_eval_requests(self, requests: list[Any]) -> list[_WithDocument]:
        out = []
        for req in requests:
            context, second, _visual, doc_id, task, split = req.args[:6]
            out.append(_WithDocument((context, second), self.task_dict[task][split][doc_id]))
        return out

    def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
        return self._replay.loglikelihood(self._lm_eval_requests(requests))  # type: ignore[no-any-return]

    def generate_until(self, requests: list[Any]) -> list[str]:
        return self._replay.generate_until(self._lm_eval_requests(requests))  # type: ignore[no-any-return]

    def generate_until_multi_round(self, requests: list[Any]) -> list[str]:
        raise NotImplementedError("judgecp-replay serves judge scores only (multiple_choice and generate_until tasks)")
