"""judgecp.kinds.ensemble.study: a study that cannot be evaluated still reports its counts (what both harnesses
show)."""

from __future__ import annotations

import pytest

from judgecp.base.errors import InputError
from judgecp.kinds.ensemble.study import (
    ensemble_metrics,
    study_report,
    study_settings,
    undefined_study_report,
)
from judgecp.kinds.metrics import metric_values
from judgecp.synthetic.judges import simulate_prompt_judge, simulated_records


def test_too_few_items_give_counts_and_nan_metrics() -> None:
    records, _ = simulated_records(simulate_prompt_judge(n_items=6, n_prompts=3, random_state=0))
    records[0] = {**records[0], "exclude": "image_load_failed"}
    settings = study_settings({"validation": 20, "seeds": 2})
    with pytest.raises(InputError) as caught:
        study_report(records, settings)
    report = undefined_study_report(records, str(caught.value))
    report["n_excluded"] = sum(e["count"] for e in report["excluded"])
    assert (report["n_items"], report["n_prompts"]) == (6, 3)
    assert report["excluded"] == [{"reason": "image_load_failed (item left out)", "count": 1,
                                   "examples": [records[0]["id"]]}]
    values = metric_values(report, ensemble_metrics(False))
    assert (values["n_items"], values["n_prompts"], values["excluded"]) == (6, 3, 1)
    assert all(v != v for k, v in values.items() if k not in ("n_items", "n_prompts", "excluded"))  # NaN
