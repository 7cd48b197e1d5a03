"""Answer-to-capture pairing, request de-duplication and recording, shared by judgecp's models.

lm-eval's ``generate_until`` implementations decode each batch and report
every answer to the model's cache hook, in batch order, right after the
batch's generate call. A judgecp model queues what it captured for each
row of that call (logits, token logprobs) in the same order; the hook
stand-in (:class:`_PairingHook`) pairs the next capture with each answer and
turns them into the JSON of a ``score`` judge output (also what lm-eval caches). The
harness's own batching, stop sequences and decoding stay untouched.

No torch import here: the vLLM model uses it too.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict, deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecp.base.records import judge_output
from judgecp.base.scale import LikertScale
from judgecp.data import images
from judgecp.data.extraction import DEFAULT_FLOOR

logger = logging.getLogger("lm_eval.judgecp")


class _PairingHook:
    """Stands in for lm-eval's cache hook during ``generate_until``.

    lm-eval reports each decoded answer to the cache hook right after the
    batch that produced it, in batch order; the captures of that batch were
    queued in the same order by ``_model_generate``. Pairing them here turns
    each answer into a judge response, which is also what gets cached.
    """

    def __init__(self, inner: Any, model: GenerationPairingMixin) -> None:
        self.inner = inner
        self.model = model

    def add_partial(self, attr: str, req: Any, res: Any) -> None:
        if attr == "generate_until" and self.model._judgecp_pending:
            context = req[0]
            response = self.model._judgecp_respond(res, self.model._judgecp_pending.popleft())
            self.model._judgecp_done[(context, res)].append(response)
            res = response
        if self.inner is not None:
            self.inner.add_partial(attr, req, res)


class GenerationPairingMixin:
    """``generate_until`` that returns judge responses; ``record=PATH`` support.

    A model class sets up with :meth:`_pairing_init` (also the ``scale`` and ``floor`` model
    arguments), queues one capture per
    generated row in ``self._judgecp_pending`` while ``self._judgecp_capturing``
    is set, and implements :meth:`_judgecp_respond` (answer + capture -> JSON).
    """

    def _pairing_init(self, record: str | None, scale: str = "1:5", floor: float | str | None = None) -> None:
        self.judgecp_scale = LikertScale.parse(str(scale))
        self.judgecp_floor = DEFAULT_FLOOR if floor in (None, "") else float(floor)  # type: ignore[arg-type]
        self.judgecp_record = None if not record else Path(str(record))
        self._judgecp_pending: deque[Any] = deque()
        self._judgecp_done: defaultdict[tuple[str, str], deque[str]] = defaultdict(deque)
        self._judgecp_capturing = False

    def _judgecp_respond(self, text: str, capture: Any) -> str:
        raise NotImplementedError

    def _judgecp_request_key(self, request: Any) -> tuple[Any, ...] | None:
        """Identity of a generation request; ``None`` when sampling (never merged)."""
        context, gen_kwargs = request.args[0], request.args[1]
        if isinstance(gen_kwargs, dict) and gen_kwargs.get("do_sample"):
            return None
        return (context, json.dumps(gen_kwargs, sort_keys=True, default=str))

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        """Generate once per distinct request and return JSON judge responses."""
        unique: list[Any] = []
        slot: list[int] = []
        seen: dict[tuple[Any, ...], int] = {}
        for req in requests:
            key = self._judgecp_request_key(req)
            if key is not None and len(req.args) > 2:
                key = (*key, images.fingerprint(req.args[2].get("visual") or []))
            if key is None or key not in seen:
                if key is not None:
                    seen[key] = len(unique)
                slot.append(len(unique))
                unique.append(req)
            else:
                slot.append(seen[key])
        inner = self.cache_hook
        self.cache_hook = _PairingHook(inner, self)
        self._judgecp_capturing = True
        self._judgecp_pending.clear()
        self._judgecp_done.clear()
        try:
            texts = super().generate_until(unique, disable_tqdm=disable_tqdm)  # type: ignore[misc]
        finally:
            self.cache_hook = inner
            self._judgecp_capturing = False
        responses = [self._judgecp_take(req.args[0], text) for req, text in zip(unique, texts, strict=True)]
        out = [responses[s] for s in slot]
        self._judgecp_write_record("cot", requests, out)
        return out

    def _judgecp_take(self, context: str, text: str) -> str:
        queue = self._judgecp_done.get((context, text))
        if queue:
            return queue.popleft()
        # Should not happen: lm-eval reported an answer without a generate call we saw.
        logger.error("judgecp: no captured logits for a generation; its document is excluded (no_score)")
        return json.dumps(judge_output("score", logprobs=None, flags=("no_score", "capture_missing"), text=text))

    # -- recording -------------------------------------------------------------

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        results = super().loglikelihood(requests, disable_tqdm=disable_tqdm)  # type: ignore[misc]
        self._judgecp_write_record("direct", requests, results)
        return results  # type: ignore[no-any-return]

    def _judgecp_write_record(self, kind: str, requests: Sequence[Any], results: Sequence[Any]) -> None:
        """Append each document's scores to ``record`` (one file per rank), for the replay model."""
        if self.judgecp_record is None or not requests:
            return
        path = self.judgecp_record
        if getattr(self, "world_size", 1) > 1:
            path = path.with_name(f"{path.stem}.rank{self.rank}{path.suffix}")
        path.parent.mkdir(parents=True, exist_ok=True)
        by_doc: dict[str, dict[str, Any]] = {}
        for req, res in zip(requests, results, strict=True):
            doc_id = str((req.doc or {}).get("id", req.doc_id))
            entry = by_doc.setdefault(doc_id, {"id": doc_id, "kind": kind})
            if kind == "direct":
                entry.setdefault("loglikelihoods", {})[req.args[1]] = [float(res[0]), bool(res[1])]
            else:
                entry["response"] = res
        with path.open("a", encoding="utf-8") as handle:
            for entry in by_doc.values():
                handle.write(json.dumps(entry) + "\n")
