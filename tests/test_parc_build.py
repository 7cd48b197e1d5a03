"""``judgecp parc build``: PARC's eleven prompt variations from generated originals.

Pixels are checked (rotation is a rotation, swap swaps, blur lowers
high-frequency energy, brightening brightens), answers are re-keyed on
hand-made items for every semantic variation, the rewriter runs against a
real HTTP server on 127.0.0.1 and a function, and the built directory is read
by both harness readers (lm-eval's task loader, VLMEvalKit's TSV builder).
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgecp.base.errors import InputError
from judgecp.cli import main
from judgecp.workflows.parc_build import (
    ALL_VARIATIONS,
    ExchangeMap,
    FunctionRewriter,
    OpenAIRewriter,
    TransformSettings,
    build,
    check_output,
    clean_output,
    load_originals,
    negate_by_rule,
    plan_exchanges,
    prompt_template,
    rekey,
)
from tests.helpers import REPO
from tests.json_server import JSONServer

Image = pytest.importorskip("PIL.Image")

SEED = REPO.parent / "shared" / "seeds" / "parc-prompt-reliability.txt"


# -- fixtures: generated originals ----------------------------------------------------------


def _textured(seed: int, size: tuple[int, int] = (24, 16)) -> Any:
    """A random RGB image (lots of high-frequency energy), reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8), "RGB")


def _source_with_images(tmp_path: Path, *names: str) -> Path:
    """``tmp_path/src`` with ``img/<name>.png`` for each name (textured, seeded by the name)."""
    root = tmp_path / "src"
    (root / "img").mkdir(parents=True)
    for name in names:
        _textured(ord(name)).save(root / "img" / f"{name}.png")
    return root


def write_originals(root: Path, *, comparative: int = 4, single: int = 2) -> Path:
    """``root/originals.jsonl``: two-image Left/Right items (mit_states) and one-image items (mmbench)."""
    (root / "img").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(comparative):
        for k in range(2):
            _textured(10 * i + k).save(root / "img" / f"c{i}_{k}.png")
        rows.append({"id": f"cmp-{i}", "variation": "O", "dataset": "mit_states",
                     "question": "Which object is more sliced?", "options": {"A": "Left", "B": "Right"},
                     "correct": ["AB"[i % 2]], "image": [f"img/c{i}_0.png", f"img/c{i}_1.png"]})
    for i in range(single):
        _textured(100 + i, (20, 20)).save(root / "img" / f"m{i}.png")
        rows.append({"id": f"mmb-{i}", "variation": "O", "dataset": "mmbench", "question": "Which animal is shown?",
                     "options": {"A": "cat", "B": "dog", "C": "bird", "D": "fish"}, "correct": "ABCD"[i % 4],
                     "image": f"img/m{i}.png"})
    path = root / "originals.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def records(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "variations.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"), dtype=np.float64)


def high_frequency_energy(a: np.ndarray) -> float:
    """Mean squared discrete Laplacian: the energy of the finest detail."""
    g = a.mean(axis=2)
    lap = 4 * g[1:-1, 1:-1] - g[:-2, 1:-1] - g[2:, 1:-1] - g[1:-1, :-2] - g[1:-1, 2:]
    return float((lap**2).mean())


# -- vision reformulations ------------------------------------------------------------------


def test_vision_reformulations_transform_every_image_and_keep_the_answer(tmp_path: Path) -> None:
    src = write_originals(tmp_path / "src")
    result = build(src, tmp_path / "out", variations="VR-B,VR-L,VR-R")
    got = records(tmp_path / "out")
    assert result.counts == {"O": 6, "VR-B": 6, "VR-L": 6, "VR-R": 6}
    for sid in ("cmp-0", "cmp-1", "mmb-0"):
        original = got[f"{sid}/O"]
        images = original["image"] if isinstance(original["image"], list) else [original["image"]]
        for variation in ("VR-B", "VR-L", "VR-R"):
            rec = got[f"{sid}/{variation}"]
            assert rec["correct"] == original["correct"] and rec["question"] == original["question"]
            assert rec["family"] == "VR" and rec["source_id"] == sid
            new = rec["image"] if isinstance(rec["image"], list) else [rec["image"]]
            assert len(new) == len(images)
            for before_rel, after_rel in zip(images, new, strict=True):
                before, after = pixels(tmp_path / "out" / before_rel), pixels(tmp_path / "out" / after_rel)
                if variation == "VR-R":  # 90 degrees counter-clockwise: (row, col) -> (W-1-col, row)
                    assert after.shape == (before.shape[1], before.shape[0], 3)
                    assert np.array_equal(after, np.rot90(before, k=1))
                elif variation == "VR-B":
                    assert after.shape == before.shape
                    assert high_frequency_energy(after) < 0.2 * high_frequency_energy(before)
                    assert abs(after.mean() - before.mean()) < 3  # blur moves detail, not brightness
                else:  # VR-L: every pixel at least as bright, the mean clearly brighter
                    assert after.shape == before.shape
                    assert (after >= before - 1).all() and after.mean() > 1.3 * before.mean()


def test_the_build_is_deterministic_and_its_parameters_are_in_the_manifest(tmp_path: Path) -> None:
    src = write_originals(tmp_path / "src")
    a = build(src, tmp_path / "a", variations="VR-B,VR-L,VR-R,VS-S")
    b = build(src, tmp_path / "b", variations="VR-B,VR-L,VR-R,VS-S")
    assert a.content_hash == b.content_hash and len(a.content_hash) == 64
    stronger = build(src, tmp_path / "c", variations="VR-B,VR-L,VR-R,VS-S",
                     transforms=TransformSettings(blur_fraction=0.1))
    assert stronger.content_hash != a.content_hash
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["transforms"]["VR-B"]["blur_fraction"] == 0.02
    assert manifest["transforms"]["VR-L"]["factor"] == 1.6
    assert manifest["transforms"]["VR-R"]["degrees_counterclockwise"] == 90
    assert manifest["counts"] == {"O": 6, "VR-B": 6, "VR-L": 6, "VR-R": 6, "VS-S": 4}
    assert manifest["excluded"] == {"VS-S": [{"reason": "not_two_images", "count": 2, "examples": ["mmb-0", "mmb-1"]}]}
    assert manifest["rewriter"] is None and manifest["source"]["items_kept"] == 6
    with pytest.raises(InputError, match="already holds a build"):
        build(src, tmp_path / "a", variations="VR-B")
    assert build(src, tmp_path / "a", variations="VR-B", overwrite=True).counts == {"O": 6, "VR-B": 6}
    assert not list((tmp_path / "a" / "images").glob("*VR-R*"))  # the earlier build's files are gone


# -- vision semantics -----------------------------------------------------------------------


def test_swap_swaps_the_images_and_flips_the_answer(tmp_path: Path) -> None:
    src = write_originals(tmp_path / "src")
    build(src, tmp_path / "out", variations="VS-S")
    got = records(tmp_path / "out")
    for i in range(4):
        original, swapped = got[f"cmp-{i}/O"], got[f"cmp-{i}/VS-S"]
        assert swapped["image"] == original["image"][::-1]
        assert swapped["correct"] == ["B" if original["correct"] == ["A"] else "A"]
        # the files themselves are the original pixels, right first
        for k, rel in enumerate(swapped["image"]):
            assert np.array_equal(
                pixels(tmp_path / "out" / rel), pixels(tmp_path / "src" / "img" / f"c{i}_{1 - k}.png")
            )
    assert "mmb-0/VS-S" not in got


def _exchange_items() -> list[tuple[str, str, list[str], int]]:
    # Question "Which cloud is whiter?": each item's (left, right) images and its winning side.
    return [
        ("q1", "Which cloud is whiter?", ["w1.png", "l1.png"], 0),
        ("q2", "Which cloud is whiter?", ["l2.png", "w2.png"], 1),
        ("q3", "which  cloud is WHITER?", ["w3.png", "l3.png"], 0),  # same question text, spacing and case aside
        ("solo", "Which fence is burnter?", ["a.png", "b.png"], 0),
        ("p1", "Which road is more paved?", ["r1.png", "r2.png"], 0),
        ("p2", "Which road is more paved?", ["r3.png", "r4.png"], 1),
    ]


def test_exchange_follows_the_supplement_procedure() -> None:
    # Step 3's annotation: l1 beats l2 and l3 (it is whiter than those darker clouds); l2 beats nothing.
    cmap = ExchangeMap.from_entries([
        {"question": "Which cloud is whiter?", "image": "l1.png", "beats": ["l2.png", "l3.png", "elsewhere.png"]},
        {"question": "Which cloud is whiter?", "image": "l3.png", "beats": ["l2.png"]},
    ])
    planned, left_out = plan_exchanges(_exchange_items(), cmap)
    # q1: its loser l1 beats l2 and l3 (losing images of the question): the winner w1 is replaced by one of them.
    assert (
        planned["q1"].side == 0 and planned["q1"].replaced == "w1.png" and planned["q1"].image in {"l2.png", "l3.png"}
    )
    # q3: loser l3 beats l2: w3 is replaced by l2.
    assert (planned["q3"].side, planned["q3"].image) == (0, "l2.png")
    # q2: loser l2 beats nothing -> no valid exchange; 'elsewhere.png' is no losing image of the question.
    assert left_out == {"q2": "no_valid_exchange", "solo": "question_single_instance",
                        "p1": "question_not_in_exchange_map", "p2": "question_not_in_exchange_map"}
    # The roles swapped: the loser is replaced by a winning image that beats the winner.
    swapped_map = ExchangeMap.from_entries(
        [{"question": "Which cloud is whiter?", "image": "w2.png", "beats": ["w1.png"]}]
    )
    planned, _ = plan_exchanges(_exchange_items(), swapped_map, replace="loser")
    assert (planned["q1"].side, planned["q1"].replaced, planned["q1"].image, planned["q1"].role) == (
        1,
        "l1.png",
        "w2.png",
        "loser",
    )


def test_exchange_map_from_attribute_scores() -> None:
    cmap = ExchangeMap.from_entries([
        {"question": "Which cloud is whiter?", "image": f"{name}.png", "score": score}
        for name, score in (("w1", 0.9), ("l1", 0.5), ("l2", 0.2), ("l3", 0.45), ("w2", 0.8), ("w3", 0.7))
    ], min_gap=0.1)
    beats = cmap.beats["which cloud is whiter?"]
    assert beats["l1.png"] == {"l2.png"}  # 0.5 - 0.45 is within the gap
    assert beats["l3.png"] == {"l2.png"} and beats["l2.png"] == set()
    with pytest.raises(InputError, match="'beats'"):
        ExchangeMap.from_entries([{"question": "q", "image": "x.png"}])


def test_exchange_builds_flipped_records_and_counts_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "src"
    (root / "img").mkdir(parents=True)
    rows = []
    for sid, question, images, win in _exchange_items():
        for k, name in enumerate(images):
            _textured(sum(map(ord, name)) + k).save(root / "img" / name)
        rows.append({"id": sid, "dataset": "mit_states", "question": question, "options": {"A": "Left", "B": "Right"},
                     "correct": ["A", "B"][win], "image": [f"img/{n}" for n in images]})
    (root / "originals.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "exchange.json").write_text(
        json.dumps(
            {"Which cloud is whiter?": {"img/l1.png": ["img/l2.png", "img/l3.png"], "img/l3.png": ["img/l2.png"]}}
        )
    )
    with pytest.raises(InputError, match="exchange map"):
        build(root / "originals.jsonl", tmp_path / "none", variations="VS-E")
    result = build(root / "originals.jsonl", tmp_path / "out", variations="VS-E", exchange_map=root / "exchange.json")
    got = records(tmp_path / "out")
    assert result.counts == {"O": 6, "VS-E": 2}
    left = {e["reason"]: e["count"] for e in result.manifest["excluded"]["VS-E"]}
    assert left == {"no_valid_exchange": 1, "question_single_instance": 1, "question_not_in_exchange_map": 2}
    q3, q3_o = got["q3/VS-E"], got["q3/O"]
    assert q3["correct"] == ["B"] and q3_o["correct"] == ["A"]  # the old loser (right) now wins
    assert q3["image"][1] == q3_o["image"][1]  # the losing image stays where it was
    assert q3["image"][0] == got["q2/O"]["image"][0]  # l2's copy (q2's left image) replaced the winner
    assert q3["exchange"] == {"side": "left", "replaced": "img/w3.png", "with": "img/l2.png", "role": "winner"}
    assert result.manifest["exchange"]["sha256"] == ExchangeMap.read(root / "exchange.json").digest()


# -- language variations --------------------------------------------------------------------


def test_prompts_are_the_supplements_verbatim() -> None:
    if not SEED.is_file():
        pytest.skip(f"{SEED} is absent")
    seed = re.sub(r"\s", "", SEED.read_text(encoding="utf-8").replace("\xa0", " "))
    for variation in ("LR-I", "LR-C", "LR-V", "LS-N", "LS-A", "LS-M", "clean"):
        prompt = prompt_template(variation)
        assert re.sub(r"\s", "", prompt) in seed, variation
        assert prompt.endswith("\nA:") and ("<Prompt to alter>" in prompt or "<Prompt to Rephrase>" in prompt)
    assert prompt_template("LS-N").startswith(
        "Change the following questions to ask for the opposite by negating them with ‘not’."
    )


def test_rekeying_for_every_semantic_variation() -> None:
    four = ["A", "B", "C", "D"]
    for variation in ("LS-N", "LS-A", "LS-M"):
        assert rekey(variation, four, ["B"]) == ["A", "C", "D"]  # the originally wrong options
        assert rekey(variation, ["A", "B"], ["A"]) == ["B"]  # Left/Right: the other side
        assert rekey(variation, four, ["A", "C"]) == ["B", "D"]
    for variation in ("LR-I", "LR-C", "LR-V"):
        assert rekey(variation, four, ["B"]) == ["B"]


def test_output_cleaning_and_checks() -> None:
    assert clean_output('  "Which road is not more paved?"\nQ: "next"') == "Which road is not more paved?"
    assert clean_output('A: "Determine which road is more paved."') == "Determine which road is more paved."
    assert clean_output('Which cloud is less white?" Q: "Which bed') == "Which cloud is less white?"
    assert clean_output("\n\n") == ""
    assert (
        clean_output('Sure! Here is the question: "Which road is not more paved?"') == "Which road is not more paved?"
    )
    options = {"A": "Left", "B": "Right"}
    q = "Which road is more paved?"
    assert check_output("LS-N", q, "", options) == ["rewrite_empty"]
    assert check_output("LS-A", q, "which road is more paved", options) == ["rewrite_unchanged", "question_mark_lost"]
    assert check_output("LR-C", q, "Which road is more paved?", options) == []  # LR-C may keep the question
    assert check_output("LR-I", q, "Determine which road is more paved.", options) == []  # an instruction
    assert check_output("LR-V", q, "Is the left or the right road more paved?", options) == ["options_leaked"]
    assert check_output("LS-N", "Which is red?", "Which is not red? (A) pen (B) cup", {"A": "pen", "B": "cup"}) == [
        "question_mark_lost", "options_leaked"]
    assert negate_by_rule("Which animal has longer fur?") == "Which animal has not longer fur?"  # PARC's Table 1
    assert negate_by_rule("Which road is more paved?") == "Which road is not more paved?"
    assert negate_by_rule("Where the bike?") is None


class _Rewrites:
    """A scripted rewriter: the question is read back from the prompt's last ``Q: "..."`` line."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        question = re.findall(r'Q: "(.*)"', prompt)[-1]
        kind = next(k for k, marker in (("LR-I", "into instructions"), ("LR-C", "fewer words"),
                                        ("LR-V", "more verbose"), ("LS-N", "with ‘not’"), ("LS-A", "antonyms"),
                                        ("LS-M", "‘less’")) if marker in prompt)
        if "animal" in question:  # an answer that fails a check for every variation
            return {"LR-I": "", "LR-C": "Animal shown", "LR-V": "", "LS-N": "Which animal is shown?",
                    "LS-A": "Is it a cat or a dog?", "LS-M": "x?"}[kind]
        return {"LR-I": 'A: "Determine which object is more sliced."', "LR-C": "More sliced object?",
                "LR-V": "In the presented pictures, which of the two objects is more sliced?",
                "LS-N": '"Which object is not more sliced?"', "LS-A": "Which object is more whole?",
                "LS-M": "Which object is less sliced?"}[kind]


def test_language_variations_with_a_function_rewriter(tmp_path: Path) -> None:
    src = write_originals(tmp_path / "src")
    script = _Rewrites()
    result = build(src, tmp_path / "out", variations="language", rewriter=FunctionRewriter(script, "scripted"))
    got = records(tmp_path / "out")
    # Two question texts: one call per (variation, question), whatever the number of items.
    assert len(script.prompts) == 6 + 5  # LS-M is never asked for "Which animal is shown?"
    assert result.counts == {"O": 6, "LR-I": 4, "LR-C": 4, "LR-V": 4, "LS-N": 4, "LS-A": 4, "LS-M": 4}
    ex = result.manifest["excluded"]
    assert {e["reason"]: e["count"] for e in ex["LS-M"]} == {"no_more_less": 2}
    assert {e["reason"]: e["count"] for e in ex["LR-I"]} == {"rewrite_empty": 2}
    assert {e["reason"]: e["count"] for e in ex["LR-C"]} == {"question_mark_lost": 2}
    assert {e["reason"]: e["count"] for e in ex["LR-V"]} == {"rewrite_empty": 2}
    assert {e["reason"]: e["count"] for e in ex["LS-N"]} == {"rewrite_unchanged": 2}
    assert {e["reason"]: e["count"] for e in ex["LS-A"]} == {"options_leaked": 2}
    rec = got["cmp-1/LS-N"]
    assert rec["question"] == "Which object is not more sliced?" and rec["correct"] == ["A"]
    assert got["cmp-1/O"]["correct"] == ["B"] and got["cmp-1/LR-V"]["correct"] == ["B"]
    assert got["cmp-0/LR-I"]["question"] == "Determine which object is more sliced."
    assert got["cmp-0/LS-M"]["question"] == "Which object is less sliced?" and got["cmp-0/LS-M"]["correct"] == ["B"]
    assert got["cmp-0/LS-M"]["family"] == "LS" and got["cmp-0/LS-M"]["generated_by"] == "rewriter"
    review = [json.loads(line) for line in (tmp_path / "out" / "review.jsonl").read_text().splitlines()]
    assert {(r["source_id"], r["variation"]) for r in review} == {
        (f"mmb-{i}", v) for i in range(2) for v in ("LR-I", "LR-C", "LR-V", "LS-N", "LS-A")}
    assert next(r for r in review if r["id"] == "mmb-0/LS-A")["output"] == "Is it a cat or a dog?"
    assert all(r["action"] == "excluded" and r["checks"] for r in review)
    manifest = result.manifest
    assert manifest["rewriter"] == {"kind": "function", "name": "scripted"}
    assert manifest["prompts"]["LS-A"]["text"] == prompt_template("LS-A")
    assert manifest["review"]["entries"] == 10
    # The prompt sent is the supplement's with the question in place of <Prompt to alter>.
    sent = next(p for p in script.prompts if "with ‘not’" in p and "sliced" in p)
    assert sent == prompt_template("LS-N").replace("<Prompt to alter>", "Which object is more sliced?")


def test_language_variations_need_a_rewriter_except_flagged_ls_n(tmp_path: Path) -> None:
    src = write_originals(tmp_path / "src")
    with pytest.raises(InputError, match="LR-I need a rewriter"):
        build(src, tmp_path / "out", variations="LR-I,VR-B")
    result = build(src, tmp_path / "out", variations="LS-N", ls_n_fallback=True)
    got = records(tmp_path / "out")
    assert result.counts == {"O": 6, "LS-N": 6}
    assert got["mmb-0/LS-N"]["question"] == "Which animal is not shown?"
    assert got["mmb-0/LS-N"]["correct"] == ["B", "C", "D"]
    assert all(r["flags"] == ["ls_n_rule_fallback"] for k, r in got.items() if k.endswith("/LS-N"))
    assert all("flags" not in r for k, r in got.items() if not k.endswith("/LS-N"))
    # With a rewriter, the rule only replaces the outputs that fail a check, and says so.
    build(src, tmp_path / "both", variations="LS-N", rewriter=FunctionRewriter(_Rewrites()), ls_n_fallback=True)
    got = records(tmp_path / "both")
    assert got["cmp-0/LS-N"]["generated_by"] == "rewriter" and "flags" not in got["cmp-0/LS-N"]
    assert got["mmb-0/LS-N"]["flags"] == ["ls_n_rule_fallback"]


def _rewriter_reply(body: dict[str, Any], path: str, headers: dict[str, str]) -> dict[str, Any]:
    answer = _Rewrites()(body["messages"][-1]["content"])
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}]}


@pytest.fixture
def chat_server() -> Iterator[JSONServer]:
    """An OpenAI-compatible chat endpoint at ``chat_server.url + "/v1"`` that rewrites as :class:`_Rewrites`."""
    with JSONServer(_rewriter_reply) as server:
        yield server


def test_openai_compatible_rewriter_over_http(tmp_path: Path, chat_server: JSONServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARC_TEST_KEY", "sk-test")
    src = write_originals(tmp_path / "src")
    rewriter = OpenAIRewriter(chat_server.url + "/v1", "llama3-70b", api_key_env="PARC_TEST_KEY")
    result = build(src, tmp_path / "out", variations="LS-N,LS-M,VR-R", rewriter=rewriter)
    assert result.counts == {"O": 6, "LS-N": 4, "LS-M": 4, "VR-R": 6}
    first = chat_server.requests[0]
    body = first["body"]
    assert first["path"] == "/v1/chat/completions" and body["model"] == "llama3-70b" and body["temperature"] == 0.0
    assert first["headers"].get("Authorization") == "Bearer sk-test"
    assert body["messages"] == [{"role": "user", "content": prompt_template("LS-N").replace(
        "<Prompt to alter>", "Which object is more sliced?")}]
    assert result.manifest["rewriter"]["endpoint"] == chat_server.url + "/v1/chat/completions"
    assert "sk-test" not in json.dumps(result.manifest)  # the key is never written
    assert records(tmp_path / "out")["cmp-2/LS-N"]["question"] == "Which object is not more sliced?"
    with pytest.raises(InputError, match="failed after"):
        OpenAIRewriter("http://127.0.0.1:9/v1", "m", retries=0, timeout=2).rewrite("hello")


def test_a_tiny_local_hugging_face_model_as_rewriter(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    import torch
    from transformers import LlamaForCausalLM

    from judgecp.bench.tiny_models import _llama_config, train_tokenizer
    from judgecp.workflows.parc_build import HFRewriter
    from tests.lm_eval.scripted import script_judge

    answer = ' "Which road is not more paved?"'
    tokenizer = train_tokenizer(extra_text=[answer.strip()] * 50 + [prompt_template("LS-N")])
    torch.manual_seed(0)
    model = LlamaForCausalLM(_llama_config(tokenizer, 64, 2, 2048))
    script_judge(model, tokenizer, answer, after=":")
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    root = tmp_path / "src"
    (root / "img").mkdir(parents=True)
    _textured(1).save(root / "img" / "a.png")
    _textured(2).save(root / "img" / "b.png")
    (root / "originals.jsonl").write_text(json.dumps({
        "id": "road-1", "dataset": "mit_states", "question": "Which road is more paved?",
        "options": {"A": "Left", "B": "Right"}, "correct": ["B"], "image": ["img/a.png", "img/b.png"]}) + "\n")
    rewriter = HFRewriter(str(tmp_path / "tiny"), max_new_tokens=16)
    result = build(root / "originals.jsonl", tmp_path / "out", variations="LS-N", rewriter=rewriter)
    rec = records(tmp_path / "out")["road-1/LS-N"]
    assert rec["question"] == "Which road is not more paved?" and rec["correct"] == ["A"]
    assert result.manifest["rewriter"]["kind"] == "hf" and result.manifest["rewriter"]["model"] == str(
        tmp_path / "tiny"
    )


# -- sources --------------------------------------------------------------------------------


def _png_b64(seed: int) -> str:
    buffer = io.BytesIO()
    _textured(seed).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_a_table_with_letter_columns_base64_images_and_text_answers(tmp_path: Path) -> None:
    import csv

    path = tmp_path / "mmbench_like.tsv"
    with path.open("w", newline="") as f:
        w = csv.writer(f, delimiter="\t")
        w.writerow(["index", "question", "A", "B", "C", "D", "answer", "image"])
        w.writerow([0, "What is shown?", "cat", "dog", "bird", "", "B", _png_b64(1)])  # three options
        w.writerow([1, "Which colour?", "red", "blue", "", "", "blue", _png_b64(2)])  # the answer as option text
        w.writerow([2, "Which colour?", "red", "blue", "", "", "E", _png_b64(3)])
        w.writerow([3, "", "red", "blue", "", "", "A", _png_b64(4)])
        w.writerow([4, "Where?", "here", "there", "", "", "A", "missing.png"])
    originals = load_originals(path, dataset="mmbench")
    assert [(o.source_id, o.options, o.correct) for o in originals.items] == [
        ("mmbench-0", {"A": "cat", "B": "dog", "C": "bird"}, ["B"]), ("mmbench-1", {"A": "red", "B": "blue"}, ["B"])]
    assert {e["reason"] for e in originals.excluded.to_json()} == {"answer_not_an_option", "question_missing",
                                                                   "image_missing"}
    result = build(originals, tmp_path / "out", variations="VR-R")
    assert result.counts == {"O": 2, "VR-R": 2}
    assert records(tmp_path / "out")["mmbench-0/O"]["image"] == "images/mmbench-0_O.png"


def test_a_compbench_style_annotation_file(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    for name in ("a", "b", "c", "d"):
        _textured(ord(name)).save(tmp_path / "images" / f"{name}.jpg", format="PNG")
    (tmp_path / "st_label.json").write_text(json.dumps([
        {"image_1": "images/a.jpg", "image_2": "images/b.jpg", "question": "Which apple is more sliced?",
         "answer": "Right", "type": "State"},
        {"image_1": "images/c.jpg", "image_2": "images/d.jpg", "question": "Which apple is more sliced?",
         "answer": "left", "type": "State"},
    ]))
    result = build(tmp_path / "st_label.json", tmp_path / "out", variations="VS-S", dataset="mit_states")
    got = records(tmp_path / "out")
    assert result.counts == {"O": 2, "VS-S": 2}
    first = got["mit_states-00000/O"]
    assert (
        first["options"] == {"A": "Left", "B": "Right"}
        and first["correct"] == ["B"]
        and first["dataset"] == "mit_states"
    )
    assert got["mit_states-00000/VS-S"]["correct"] == ["A"] and got["mit_states-00001/VS-S"]["correct"] == ["B"]
    assert first["image"] == ["images/mit_states-00000_O_0.jpg", "images/mit_states-00000_O_1.jpg"]


def test_hub_datasets_load_through_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub path (no internet here): ``datasets.load_dataset`` answers with a local dataset of PIL images."""
    datasets = pytest.importorskip("datasets")
    rows = [{"index": i, "question": f"What is shown in picture {i}?", "hint": None, "A": "cat", "B": "dog",
             "C": "bird" if i % 2 else None, "D": None, "answer": "AB"[i % 2], "image": _textured(i)} for i in range(3)]
    features = datasets.Features({"index": datasets.Value("int64"), "question": datasets.Value("string"),
                                  "hint": datasets.Value("string"), "A": datasets.Value("string"),
                                  "B": datasets.Value("string"), "C": datasets.Value("string"),
                                  "D": datasets.Value("string"), "answer": datasets.Value("string"),
                                  "image": datasets.Image()})
    local = datasets.Dataset.from_list(rows, features=features)
    calls: list[tuple[Any, ...]] = []

    def fake_load(*args: Any, **kwargs: Any) -> Any:
        calls.append((*args, kwargs.get("split")))
        return local

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    result = build("mmbench", tmp_path / "out", variations="VR-B")
    assert calls == [("lmms-lab/MMBench_EN", "dev")]
    assert result.counts == {"O": 3, "VR-B": 3} and result.manifest["datasets"] == ["mmbench"]
    got = records(tmp_path / "out")
    assert got["mmbench-1/O"]["options"] == {"A": "cat", "B": "dog", "C": "bird"}
    assert got["mmbench-0/O"]["options"] == {"A": "cat", "B": "dog"}
    assert np.array_equal(
        pixels(tmp_path / "out" / got["mmbench-2/O"]["image"]), np.asarray(_textured(2), dtype=np.float64)
    )
    assert result.manifest["source"]["hub_id"] == "lmms-lab/MMBench_EN"
    # A local copy of a hub dataset (its parquet files) reads the same.
    (tmp_path / "copy" / "data").mkdir(parents=True)
    monkeypatch.undo()
    local.to_parquet(str(tmp_path / "copy" / "data" / "dev-00000-of-00001.parquet"))
    copy = build(tmp_path / "copy", tmp_path / "out2", variations="VR-B", split="dev", dataset="mmbench")
    assert copy.content_hash == result.content_hash
    local.select([0]).to_parquet(str(tmp_path / "copy" / "data" / "test-00000-of-00001.parquet"))
    with pytest.raises(InputError, match=r"several splits \(dev, test\)"):
        load_originals(tmp_path / "copy")
    assert len(load_originals(tmp_path / "copy", split="test").items) == 1
    with pytest.raises(InputError, match="not a file or directory"):
        load_originals("no-such-thing")


# -- both harnesses read the build ----------------------------------------------------------


def test_lm_eval_task_loader_reads_the_build(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    from judgecp.data.images import load_images as doc_to_image  # parc_cp's doc_to_image
    from tests.lm_eval.test_data_sources import task_utils

    src = write_originals(tmp_path / "src")
    build(src, tmp_path / "out", variations="LS-N,VR-B,VR-L,VR-R,VS-S", ls_n_fallback=True)
    utils = task_utils("parc_cp")
    docs = utils.load_docs(data_dir=str(tmp_path / "out"))["test"]
    assert len(docs) == 6 * 5 + 4 and not any(d["exclude"] for d in docs)
    by_id = {d["id"]: d for d in docs}
    swap = by_id["parc/cmp-0/VS-S"]
    assert swap["variation"] == "VS-S" and swap["letters"] == ["A", "B"] and len(swap["image_refs"]) == 2
    assert [im.size for im in doc_to_image(by_id["parc/cmp-0/VR-R"])] == [(16, 24), (16, 24)]
    assert utils.doc_to_text(by_id["parc/mmb-1/LS-N"]).startswith("<image>\nWhich animal is not shown?\nA. cat")
    only = utils.load_docs(data_dir=str(tmp_path / "out"), parc_dataset="mmbench")["test"]
    assert len(only) == 2 * 5


def test_vlmeval_tsv_builder_reads_the_build(tmp_path: Path) -> None:
    import csv

    try:
        from judgecp.adapters.vlmeval.builders import build_parc
    except ImportError as exc:  # the adapter is being ported to the new core API on main
        pytest.skip(f"judgecp.adapters.vlmeval.builders does not import: {exc}")
    src = write_originals(tmp_path / "src")
    build(src, tmp_path / "out", variations="VR-B,VS-S,LS-N", ls_n_fallback=True)
    result = build_parc(tmp_path / "out", tmp_path / "lmu", name="PARC_toy")
    tsv = next((tmp_path / "lmu").glob("PARC_toy.tsv"))
    csv.field_size_limit(1 << 30)
    with tsv.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert len(rows) == 6 * 3 + 4 == result.rows_written and not result.excluded
    swap = next(r for r in rows if r["item_id"] == "cmp-0/VS-S")
    assert swap["answer"] == "B" and swap["family"] == "VS" and swap["variation"] == "VS-S"


# -- command line ---------------------------------------------------------------------------


def test_cli_builds_vision_variations_without_a_rewriter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_originals(tmp_path / "src")
    out = tmp_path / "out"
    assert main(["parc", "build", str(src), "-o", str(out), "--variations", "VR-B,VR-R,VS-S"]) == 0
    text = capsys.readouterr().out
    assert "6 of 6 source items" in text and "not_two_images 2" in text
    assert json.loads((out / "manifest.json").read_text())["counts"] == {"O": 6, "VR-B": 6, "VR-R": 6, "VS-S": 4}
    assert main(["parc", "build", str(src), "-o", str(out), "--variations", "VR-B"]) == 2  # already built
    assert main(["parc", "build", str(src), "-o", str(tmp_path / "x"), "--variations", "LR-Q"]) == 2
    assert main(["parc", "build", str(src), "-o", str(tmp_path / "y"), "--variations", "LR-I"]) == 2
    err = capsys.readouterr().err
    assert "unknown PARC variation 'LR-Q'" in err and "LR-I need a rewriter" in err
    assert main(["parc", "build", str(src), "-o", str(tmp_path / "z"), "--variations", "all", "--json",
                 "--ls-n-fallback", "--rewriter-url", "http://127.0.0.1:9/v1"]) == 2  # no --rewriter-model
    assert set(ALL_VARIATIONS) == {
        "LR-I",
        "LR-C",
        "LR-V",
        "LS-N",
        "LS-A",
        "LS-M",
        "VR-B",
        "VR-L",
        "VR-R",
        "VS-S",
        "VS-E",
    }


def test_the_documented_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "parc_build.md").read_text(), re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], "docs/parc_build.md", "exec"), {})
    assert (tmp_path / "parc_example" / "out" / "manifest.json").is_file()


def test_bad_items_are_counted_never_dropped_silently(tmp_path: Path) -> None:
    root = _source_with_images(tmp_path, "a", "b")
    (root / "img" / "broken.png").write_bytes(b"not an image")
    good = {"dataset": "d", "question": "Which is bigger?", "options": {"A": "Left", "B": "Right"}, "correct": "A",
            "image": ["img/a.png", "img/b.png"]}
    lines = [
        json.dumps({**good, "id": "ok"}),
        json.dumps({**good, "id": "ok"}),  # the same id again
        json.dumps({**good, "id": "broken", "image": ["img/a.png", "img/broken.png"]}),
        json.dumps({**good, "id": "gone", "image": ["img/a.png", "img/nowhere.png"]}),
        json.dumps({**good, "id": "one-option", "options": {"A": "Left"}}),
        json.dumps({**good, "id": "no-answer", "correct": None}),
        json.dumps({**good, "id": "colours", "options": {"A": "red", "B": "blue"}}),  # two images, not Left/Right
        "{not json",
    ]
    (root / "originals.jsonl").write_text("\n".join(lines) + "\n")
    result = build(root / "originals.jsonl", tmp_path / "out", variations="VS-S,VR-L")
    source = {e["reason"]: e["count"] for e in result.manifest["source"]["excluded"]}
    assert source == {"duplicate_id": 1, "image_unreadable": 1, "image_missing": 1, "options_invalid": 1,
                      "answer_missing": 1, "malformed_json_line": 1}
    assert result.counts == {"O": 2, "VS-S": 1, "VR-L": 2}
    assert result.manifest["excluded"]["VS-S"][0]["reason"] == "not_left_right"
    (root / "map.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="entry 1"):
        build(root / "originals.jsonl", tmp_path / "out2", variations="VS-E", exchange_map=root / "map.json")
    (root / "map.json").write_text("{nope")
    with pytest.raises(InputError, match="neither JSON nor JSONL"):
        ExchangeMap.read(root / "map.json")
    with pytest.raises(InputError, match="brightness_factor must be > 1"):
        TransformSettings(brightness_factor=0.5)


def test_cleaning_rephrases_questions_before_the_variations(tmp_path: Path) -> None:
    """A7.4 steps 2-3 through the rewriter: checked, the source's text kept on the original record."""
    root = tmp_path / "src"
    (root / "img").mkdir(parents=True)
    _textured(1).save(root / "img" / "a.png")
    rows = [
        {"id": "e1", "question": "Complete the sentence.The African elephant is the () land animal in the world.",
         "options": {"A": "largest", "B": "smallest"}, "correct": "A", "image": "img/a.png"},
        {"id": "e2", "question": "where is the bike?", "options": {"A": "street", "B": "roof"}, "correct": "A",
         "image": "img/a.png"},
        {"id": "e3", "question": "Which road is more paved?", "options": {"A": "Left", "B": "Right"}, "correct": "B",
         "image": "img/a.png"},
    ]
    (root / "originals.jsonl").write_text("".join(json.dumps({**r, "dataset": "mmbench"}) + "\n" for r in rows))
    answers = {
        "Complete the sentence.The African elephant is the () land animal in the world.":
            "How do you complete the following sentence? ‘The African elephant is the () land animal in the world.’",
        "where is the bike?": "The place of the bike",  # not a question: the source's text is kept
        "Which road is more paved?": "Which road is more paved?",
    }

    def rewrite(prompt: str) -> str:
        if "into questions" in prompt:
            return answers[re.findall(r'Q: "(.*)"', prompt)[-1]]
        return '"' + re.findall(r'Q: "(.*)"', prompt)[-1].replace(" is ", " is not ", 1) + '"'

    with pytest.raises(InputError, match="needs a rewriter"):
        build(root / "originals.jsonl", tmp_path / "x", variations="VR-B", clean_questions=True)
    result = build(root / "originals.jsonl", tmp_path / "out", variations="LS-N", clean_questions=True,
                   rewriter=FunctionRewriter(rewrite))
    got = records(tmp_path / "out")
    assert got["e1/O"]["question"].startswith("How do you complete the following sentence?")
    assert got["e1/O"]["question_source"] == rows[0]["question"]
    assert got["e1/LS-N"]["question"].startswith("How do you complete the following sentence?")
    assert got["e2/O"]["question"] == "where is the bike?" and "question_source" not in got["e2/O"]
    assert {e["reason"]: e["count"] for e in result.manifest["cleaning"]["outcomes"]} == {
        "rephrased": 1, "kept_source_question": 1, "unchanged": 1}
    review = [json.loads(line) for line in (tmp_path / "out" / "review.jsonl").read_text().splitlines()]
    assert [(r["id"], r["checks"]) for r in review] == [("e2/O", ["not_a_question"])]
    assert result.manifest["cleaning"]["prompt"]["text"] == prompt_template("clean")


def test_threads_do_not_change_the_output(tmp_path: Path) -> None:
    src = write_originals(tmp_path / "src")
    one = build(src, tmp_path / "one", variations="VR-B,VR-L,VR-R,VS-S")
    three = build(src, tmp_path / "three", variations="VR-B,VR-L,VR-R,VS-S", jobs=3)
    assert one.content_hash == three.content_hash and one.counts == three.counts


def test_cli_language_variations_through_an_endpoint(tmp_path: Path, chat_server: JSONServer,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    src = write_originals(tmp_path / "src")
    out = tmp_path / "out"
    assert (
        main(
            [
                "parc",
                "build",
                str(src),
                "-o",
                str(out),
                "--variations",
                "LS-N,LS-M,VR-L",
                "--json",
                "--rewriter-url",
                chat_server.url + "/v1",
                "--rewriter-model",
                "llama3-70b",
                "--ls-n-fallback",
                "--jobs",
                "2",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"] == {"O": 6, "LS-N": 6, "LS-M": 4, "VR-L": 6}  # mmbench's LS-N by the flagged rule
    assert summary["review"]["entries"] == 2 and len(summary["content_hash"]) == 64
    got = records(out)
    assert got["mmb-0/LS-N"]["flags"] == ["ls_n_rule_fallback"] and got["cmp-0/LS-N"]["generated_by"] == "rewriter"
    assert {r["body"]["model"] for r in chat_server.requests} == {"llama3-70b"}


def test_a_build_never_writes_over_its_source(tmp_path: Path) -> None:
    src = write_originals(tmp_path / "src")
    first = build(src, tmp_path / "out", variations="VR-R")
    # An earlier build's originals are a source (its "O" lines), but not into the same directory.
    with pytest.raises(InputError, match="inside the output directory"):
        build(tmp_path / "out", tmp_path / "out", variations="VR-B", overwrite=True)
    again = build(tmp_path / "out", tmp_path / "again", variations="VR-R")
    assert again.counts == first.counts
    assert (tmp_path / "src" / "img" / "c0_0.png").is_file()


def test_ls_m_scope_comparative_covers_left_right_items_however_worded(tmp_path: Path) -> None:
    root = _source_with_images(tmp_path, "a", "b")
    rows = [{"id": "u1", "question": "Which umbrella is yellower?", "options": {"A": "Left", "B": "Right"},
             "correct": "A", "image": ["img/a.png", "img/b.png"]},
            {"id": "m1", "question": "Which fruit is shown?", "options": {"A": "apple", "B": "pear"},
             "correct": "A", "image": "img/a.png"}]
    (root / "originals.jsonl").write_text("".join(json.dumps({**r, "dataset": "d"}) + "\n" for r in rows))
    rewriter = FunctionRewriter(lambda prompt: "Which umbrella is less yellow?")
    strict = build(root / "originals.jsonl", tmp_path / "a", variations="LS-M", rewriter=rewriter)
    assert strict.counts == {"O": 2, "LS-M": 0} and strict.manifest["ls_m_scope"] == "more_less"
    wide = build(
        root / "originals.jsonl", tmp_path / "b", variations="LS-M", rewriter=rewriter, ls_m_scope="comparative"
    )
    assert wide.counts == {"O": 2, "LS-M": 1}
    rec = records(tmp_path / "b")["u1/LS-M"]
    assert rec["question"] == "Which umbrella is less yellow?" and rec["correct"] == ["B"]
    assert wide.manifest["excluded"]["LS-M"][0]["examples"] == ["m1"]


def test_a_failed_build_leaves_no_half_written_directory(tmp_path: Path) -> None:
    src = write_originals(tmp_path / "src")
    down = OpenAIRewriter("http://127.0.0.1:9/v1", "m", retries=0, timeout=2)
    with pytest.raises(InputError, match="failed after 1 tries"):
        build(src, tmp_path / "out", variations="VR-B,LS-N", rewriter=down)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".*judgecp-tmp"))  # nothing half-built
    assert build(src, tmp_path / "out", variations="VR-B").counts == {"O": 6, "VR-B": 6}  # no --overwrite needed
    # A failed rebuild over an earlier build leaves that build as it was, byte for byte.
    before = {p.relative_to(tmp_path / "out"): p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    with pytest.raises(InputError, match="failed after 1 tries"):
        build(src, tmp_path / "out", variations="VR-L,LS-N", rewriter=down, overwrite=True)
    after = {p.relative_to(tmp_path / "out"): p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert after == before
