"""The embedded default: synthetic judging items and a synthetic recording of a judge's scores.

Nothing here is a real model's output. The items and the judge's score-token
logprobs come from :func:`judgecp.synthetic.judges.simulate_likert_judge` (a judge
that ranks better than it scores, in three difficulty groups, like the ones
in the seed paper). The ``judgecp_demo`` task serves the items and the
``judgecp-replay`` model replays the logprobs, so a complete lm-eval run
(requests, responses, per-document records, the conformal aggregation, the
results JSON and table) takes seconds on a CPU. Its numbers show what the
output looks like and that the machinery is sound (the coverage is the
promised one); they say nothing about any real judge.
"""

from __future__ import annotations

import functools
from typing import Any

from judgecp.synthetic.judges import simulate_likert_judge

#: Size and seed of the demo set (three groups: easy, medium, hard).
DEMO_ITEMS = 600
DEMO_SEED = 2026
DEMO_SOURCE = (
    f"judgecp.synthetic.judges.simulate_likert_judge(n={DEMO_ITEMS}, seed={DEMO_SEED}): synthetic, not a real model"
)


@functools.lru_cache(maxsize=1)
def demo_items() -> tuple[dict[str, Any], ...]:
    """The demo documents and, in ``recorded_logprobs``, the synthetic judge's scores for each."""

    data = simulate_likert_judge(n=DEMO_ITEMS, seed=DEMO_SEED)
    items = []
    for i in range(data.n):
        item_id = str(data.ids[i])
        group = str(data.fields["group"][i])
        items.append({
            "id": item_id,
            "label": str(int(data.labels[i])),
            "group": group,
            "question": f"Synthetic judging item {item_id} ({group} group).",
            "answer": "(no real answer: the judge's scores for this item are a synthetic recording)",
            "recorded_logprobs": {tok: float(v) for tok, v in zip(data.scale.tokens, data.logprobs[i], strict=True)},
        })
    return tuple(items)


def synthetic_recording() -> dict[str, dict[str, Any]]:
    """The replay model's default recording: document id -> label logprobs."""
    return {
        item["id"]: {"id": item["id"], "kind": "synthetic", "logprobs": item["recorded_logprobs"]}
        for item in demo_items()
    }
