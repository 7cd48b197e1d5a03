"""``judgecp-replay``: an lm-eval model that serves recorded judge scores instead of running a model.

``--model_args recording=PATH`` reads a JSONL recording written by a judgecp
model's ``record=PATH`` option (``{"id", "kind": "direct", "loglikelihoods":
{continuation: [ll, is_greedy]}}`` or ``{"id", "kind": "cot", "response":
...}``), keyed by the document's ``id``; without it, the synthetic recording
of the ``judgecp_demo`` items (:mod:`judgecp.adapters.lm_eval.demo`) is
served. A ``{"logprobs": {"1": lp, ...}}`` entry answers both direct
requests (by the continuation's label) and generation requests (a short
"Score: k" response). A document missing from the recording gets NaN
log-likelihoods (excluded as ``nan_logprob``) or a plain-text answer
(excluded as ``response_not_json``), never a crash, and is counted in the log.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from lm_eval.api.model import LM

from judgecp.adapters.lm_eval.demo import DEMO_SOURCE, synthetic_recording
from judgecp.base.records import judge_output

logger = logging.getLogger("lm_eval.judgecp")


def load_recording(path: str | Path) -> dict[str, dict[str, Any]]:
    """id -> entry; entries of one id from several lines (e.g. one per task) are merged."""
    recording: dict[str, dict[str, Any]] = {}
    with Path(path).open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = str(entry["id"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{lineno}: not a recording line ({exc})") from exc
            merged = recording.setdefault(key, {"id": key})
            loglikelihoods = entry.get("loglikelihoods")
            if loglikelihoods:
                merged.setdefault("loglikelihoods", {}).update(loglikelihoods)
            for field in ("response", "logprobs"):
                if field in entry:
                    merged[field] = entry[field]
    return recording


class ReplayJudgeLM(LM):
    """Replays recorded judge scores (see the module docstring)."""

    MULTIMODAL = True  # image tasks are fine: the recording already holds the judge's view of the image

    def __init__(self, recording: str | None = None, **_ignored: Any) -> None:
        super().__init__()
        if recording:
            self.recording = load_recording(recording)
            self.source = str(recording)
        else:

            self.recording = synthetic_recording()
            self.source = DEMO_SOURCE
        logger.warning("judgecp-replay: serving recorded scores from %s (no model runs)", self.source)
        self.missing = 0

    def _entry(self, request: Any) -> dict[str, Any] | None:
        entry = self.recording.get(str((request.doc or {}).get("id")))
        if entry is None:
            self.missing += 1
        return entry

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        out = []
        for req in requests:
            entry = self._entry(req) or {}
            continuation = req.args[1]
            if continuation in entry.get("loglikelihoods", {}):
                ll, greedy = entry["loglikelihoods"][continuation]
                out.append((float(ll), bool(greedy)))
            elif continuation.strip() in entry.get("logprobs", {}):
                lp = entry["logprobs"]
                value = float(lp[continuation.strip()])
                out.append((value, value == max(float(v) for v in lp.values())))
            else:
                out.append((math.nan, False))
        self._report_missing()
        return out

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        out = []
        for req in requests:
            entry = self._entry(req) or {}
            if "response" in entry:
                out.append(entry["response"])
            elif "logprobs" in entry:
                lp = {k: float(v) for k, v in entry["logprobs"].items()}
                parsed = int(max(lp, key=lp.__getitem__))
                out.append(json.dumps(judge_output("score", logprobs=lp, prediction=parsed, stage="replayed",
                                                   text=f"(replayed) Score: {parsed}")))
            else:
                out.append("(not in the recording)")
        self._report_missing()
        return out

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        raise NotImplementedError("judgecp-replay serves judge scores only (multiple_choice and generate_until tasks)")

    def _report_missing(self) -> None:
        if self.missing:
            logger.warning(
                "judgecp-replay: %d request(s) had no recorded scores; their documents are excluded", self.missing
            )
            self.missing = 0
