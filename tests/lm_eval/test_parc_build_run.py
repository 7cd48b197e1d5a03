"""End to end on CPU: ``judgecp parc build`` (all eleven variations) -> ``lm_eval --tasks parc_cp`` -> PARC scores.

The originals are generated (two-image Left/Right items and one-image items),
the language variations come from a scripted function rewriter, VS-E from an
exchange map; the tiny LLaVA judge's answers are noise, so the scores are
checked for shape and range, and the samples file is re-scored by
``judgecp evaluate --format lm-eval`` to the same numbers.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.lm_eval.helpers import judge_run, results_file, samples, skip_without_lm_eval

skip_without_lm_eval()

from judgecp.workflows.parc_build import ALL_VARIATIONS, ExchangeMap, FunctionRewriter, build  # noqa: E402

SOURCES = 6


def _rewrite(prompt: str) -> str:
    question = re.findall(r'Q: "(.*)"', prompt)[-1].rstrip("?")
    if "into instructions" in prompt:
        return f"Determine {question[0].lower()}{question[1:]}."
    if "fewer words" in prompt:
        return question.split(" ", 1)[1].capitalize() + "?"
    if "more verbose" in prompt:
        return f"In the presented picture, {question[0].lower()}{question[1:]}?"
    if "with ‘not’" in prompt:
        return question.replace(" is ", " is not ", 1) + "?"
    if "antonyms" in prompt:
        return question.replace("more sliced", "more whole").replace("shown", "hidden") + "?"
    return question.replace("more", "less") + "?"


def _originals(root: Path) -> tuple[Path, ExchangeMap]:
    from PIL import Image

    (root / "img").mkdir(parents=True)
    rng = np.random.default_rng(0)
    rows, entries = [], []
    for i in range(SOURCES):
        for k in range(2):
            Image.fromarray(rng.integers(0, 256, (16, 24, 3), dtype=np.uint8)).save(root / "img" / f"c{i}_{k}.png")
        win = i % 2
        rows.append({"id": f"ms-{i}", "dataset": "mit_states", "question": "Which object is more sliced?",
                     "options": {"A": "Left", "B": "Right"}, "correct": "AB"[win],
                     "image": [f"img/c{i}_0.png", f"img/c{i}_1.png"]})
        nxt = i + 1 if i + 1 < SOURCES else 0  # each losing image beats the next item's losing image
        entries.append({"question": "Which object is more sliced?", "image": f"img/c{i}_{1 - win}.png",
                        "beats": [f"img/c{nxt}_{1 - nxt % 2}.png"]})
        Image.fromarray(rng.integers(0, 256, (20, 20, 3), dtype=np.uint8)).save(root / "img" / f"m{i}.png")
        rows.append(
            {
                "id": f"mmb-{i}",
                "dataset": "mmbench",
                "question": "Which animal is shown?",
                "options": {"A": "cat", "B": "dog", "C": "bird"},
                "correct": "ABC"[i % 3],
                "image": f"img/m{i}.png",
            }
        )
    path = root / "originals.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, ExchangeMap.from_entries(entries)


@pytest.fixture(scope="module")
def parc_run(tmp_path_factory: pytest.TempPathFactory, tiny_llava: Path) -> tuple[Path, Path, Any, str]:
    root = tmp_path_factory.mktemp("parc_build_run")
    source, exchange = _originals(root / "src")
    result = build(source, root / "parc", variations="all", rewriter=FunctionRewriter(_rewrite, "scripted"),
                   exchange_map=exchange)
    out = root / "results"
    proc = judge_run(root, "hf-multimodal-judge", f"pretrained={tiny_llava},dtype=float32,max_length=4096",
                     "parc_cp,parc_cp_mit_states", out, {"seeds": 3}, env={"JUDGECP_PARC_DIR": str(root / "parc")},
                     timeout=600)
    return root, out, result, proc.stderr


def test_every_variation_is_built(parc_run: tuple[Path, Path, Any, str]) -> None:
    _, _, result, _ = parc_run
    # mmbench has one image and no more/less: no VS-S, VS-E or LS-M for it (PARC's Table 2 "n.a.").
    expected = {v: 2 * SOURCES for v in ("O", "LR-I", "LR-C", "LR-V", "LS-N", "LS-A", "VR-B", "VR-L", "VR-R")}
    expected.update({"LS-M": SOURCES, "VS-S": SOURCES, "VS-E": SOURCES})
    assert result.counts == expected
    assert result.manifest["excluded"]["LS-M"][0] == {"reason": "no_more_less", "count": SOURCES,
                                                       "examples": [f"mmb-{i}" for i in range(5)]}


def test_lm_eval_reports_parc_scores_for_all_eleven_variations(parc_run: tuple[Path, Path, Any, str]) -> None:
    _, out, result, stderr = parc_run
    results = results_file(out)
    got = {k.split(",")[0]: v for k, v in results["results"]["parc_cp"].items() if k.endswith(",none") and v != "N/A"}
    assert (got["n"], got["excluded"]) == (sum(result.counts.values()), 0), stderr[-3000:]
    for score in ("reliability", "accuracy", "certainty", "consistency"):
        for variation in ALL_VARIATIONS:
            value = got[f"{score}_{variation}"]
            assert math.isnan(value) or -1.0 <= value <= 1.0, (score, variation)
        for suffix in ("", "_LR", "_LS", "_VR", "_VS", "_dataset_mmbench", "_dataset_mit_states"):
            value = got[f"{score}{suffix}"]
            assert math.isnan(value) or -1.0 <= value <= 1.0, (score, suffix)
    # accuracy and certainty are defined for every variation (consistency needs the original's answers: also there)
    assert all(not math.isnan(got[f"{score}_{v}"]) for score in ("accuracy", "certainty", "reliability")
               for v in ALL_VARIATIONS)
    single = {k.split(",")[0]: v for k, v in results["results"]["parc_cp_mit_states"].items() if k.endswith(",none")}
    assert single["n"] == 12 * SOURCES  # the original and all eleven variations of each mit_states item
    # each sample carries the builder's variation and source item
    sample = next(s for s in samples(out, "parc_cp") if s["doc"]["id"] == "parc/ms-3/VS-E")
    assert sample["n"]["variation"] == "VS-E" and sample["n"]["source_id"] == "ms-3"


def test_the_samples_file_rescores_to_the_same_numbers(parc_run: tuple[Path, Path, Any, str]) -> None:
    """The core, fed the samples file's records, gives every metric lm-eval reported (NaN equal to NaN)."""
    from judgecp.kinds.choice.parc_study import parc_metrics
    from tests.lm_eval.helpers import samples_records, task_metrics

    _, out, _, _ = parc_run
    results = results_file(out)
    records = samples_records(sorted(out.rglob("samples_parc_cp_2*.jsonl")))
    found = parc_metrics(["O", *ALL_VARIATIONS], ["LR", "LS", "VR", "VS"],
                         ["mit_states", "mmbench"])
    got = task_metrics("parc", records, results["configs"]["parc_cp"]["metadata"], found)
    expected = {
        k.split(",")[0]: v for k, v in results["results"]["parc_cp"].items() if k.endswith(",none") and v != "N/A"
    }
    assert sorted(got) == sorted(expected)
    for name, value in got.items():
        assert (math.isnan(value) and math.isnan(expected[name])) or value == expected[name], name
