"""``judgecp-hf`` on a tiny random Qwen2-VL built here: direct scoring and CoT capture against manual passes.

Qwen2-VL differs from LLaVA where batching can go wrong: images of different
sizes give different numbers of image tokens and ``image_grid_thw`` rows, and
its M-RoPE needs ``mm_token_type_ids`` (one per token) beside the ids. In
transformers 5 its processor cannot be built without torchvision (the video
processor), which judgecp's CPU environment does not install
(docs/lmms_eval.md): the module is skipped there. Run on 2026-11-28 in a copy
of the environment with lmms-eval's full requirements (torch 2.14.1,
torchvision 0.29.1): passed, largest differences 1e-6.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.lmms_eval.helpers import skip_without_lmms_eval

skip_without_lmms_eval()

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers.utils import is_torchvision_available  # noqa: E402

from judgecp.adapters.capture.logits import RatingVocabulary  # noqa: E402
from judgecp.adapters.lmms_eval.models import HFJudge, with_prefix  # noqa: E402
from judgecp.base.records import parse_judge_output  # noqa: E402
from judgecp.base.scale import LikertScale  # noqa: E402
from judgecp.bench.tiny_models import train_tokenizer  # noqa: E402
from tests.lm_eval.scripted import SCRIPT, script_judge  # noqa: E402
from tests.lmms_eval import by_hand  # noqa: E402

if not is_torchvision_available():
    pytest.skip("Qwen2-VL's processor needs torchvision (transformers 5), which judgecp's CPU environment does not "
                "install (docs/lmms_eval.md, Install)", allow_module_level=True)

VISION = ("<|vision_start|>", "<|image_pad|>", "<|vision_end|>", "<|video_pad|>")
TEMPLATE = ("{% for message in messages %}USER: {% for part in message['content'] %}"
            "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ part['text'] }}"
            "{% endif %}{% endfor %}\n{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}")


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer Qwen2-VL (vision tower and language model) with a chat template, scripted to
    answer SCRIPT."""
    tok = train_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": list(VISION)})
    tok.image_token = "<|image_pad|>"  # the processor's image token, now and (init_kwargs) after saving
    tok.init_kwargs["extra_special_tokens"] = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"}
    processor = transformers.Qwen2VLProcessor(
        image_processor=transformers.Qwen2VLImageProcessor(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16),
        tokenizer=tok, video_processor=transformers.Qwen2VLVideoProcessor(), chat_template=TEMPLATE)
    ids = dict(zip(VISION, tok.convert_tokens_to_ids(list(VISION)), strict=True))
    config = transformers.Qwen2VLConfig(
        text_config={"vocab_size": len(tok), "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 4096,
                     "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 6, 6]}},
        vision_config={"depth": 2, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "patch_size": 14,
                       "spatial_merge_size": 2, "temporal_patch_size": 2},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(0)
    model = transformers.Qwen2VLForConditionalGeneration(config)
    script_judge(model, tok, SCRIPT)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    path = tmp_path_factory.mktemp("qwen") / "qwen2vl"
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def judge(qwen: Path) -> Any:
    from PIL import Image

    model = HFJudge(pretrained=str(qwen), dtype="float32")
    docs = [{"id": str(i), "img": Image.new("RGB", (40 + 9 * i, 30 + 5 * i), (40 * i, 200, 30))} for i in range(5)]
    model.task_dict["t"] = {"test": docs}
    return model


def request(judge: Any, i: int, second: Any, prefix: str | None) -> Any:
    """An lmms-eval request of document ``i`` (what the evaluator builds: args, and the task's metadata)."""
    return types.SimpleNamespace(
        args=(f"Case {i}{'x' * i}: rate it.", second, lambda doc: [doc["img"]], i, "t", "test"),
        metadata={"gen_prefix": prefix} if prefix else {},
    )


def manual_logits(judge: Any, text: str, image: Any, extra: list[int]) -> Any:
    """Unbatched, unpadded logits of the processor's encoding of ``text`` and ``image`` plus ``extra`` token ids."""
    enc = judge.processor(text=[text], images=[image], return_tensors="pt")
    ids = torch.cat([enc["input_ids"], torch.tensor([extra], dtype=enc["input_ids"].dtype)], dim=1)
    mm = torch.nn.functional.pad(enc["mm_token_type_ids"], (0, len(extra)))
    with torch.no_grad():
        logits = judge.model(input_ids=ids, pixel_values=enc["pixel_values"], image_grid_thw=enc["image_grid_thw"],
                             mm_token_type_ids=mm).logits[0].float()
    return logits, enc["input_ids"].shape[1]


def next_logprobs(judge: Any, text: str, image: Any) -> Callable[[list[int]], Any]:
    """``new ids -> log-softmax of the next token``: one unbatched, unpadded pass over ``text``,
    ``image`` and ``new``."""
    return lambda new: torch.log_softmax(manual_logits(judge, text, image, new)[0][-1], -1)


@pytest.mark.parametrize("batch_size", [1, 3])
def test_direct_scoring_equals_a_manual_pass(judge: Any, batch_size: int) -> None:
    requests = [request(judge, i, f" {k}", "Score:") for i in range(5) for k in "12345"]
    before = judge.judgecp_stats["forward_passes"]
    with by_hand.in_batches_of(judge, batch_size):
        results = judge.loglikelihood(requests)
    assert judge.judgecp_stats["forward_passes"] - before == -(-5 // batch_size)
    for req, (ll, _greedy) in zip(requests, results, strict=True):
        text = with_prefix(judge.prompt(req.args[0], 1), "Score:")
        cont = by_hand.continuation_ids(judge.tokenizer, text, req.args[1])
        logits, start = manual_logits(judge, text, judge.task_dict["t"]["test"][req.args[3]]["img"], cont)
        want, _want_greedy = by_hand.continuation_loglikelihood(logits, start, cont)
        assert ll == pytest.approx(want, abs=1e-4)


@pytest.mark.parametrize("batch_size", [1, 3])
def test_cot_capture_equals_a_manual_greedy_pass(judge: Any, batch_size: int) -> None:
    requests = [request(judge, i, {"until": [], "max_gen_toks": 12, "do_sample": False}, None) for i in range(5)]
    with by_hand.in_batches_of(judge, batch_size):
        outputs = [parse_judge_output(o, "score") for o in judge.generate_until(requests)]
    vocab = RatingVocabulary(judge.tokenizer, LikertScale())
    for req, out in zip(requests, outputs, strict=True):
        assert out is not None and out["logprobs"] is not None
        image = judge.task_dict["t"]["test"][req.args[3]]["img"]
        step = next_logprobs(judge, judge.prompt(req.args[0], 1), image)
        new, steps = by_hand.greedy_decoding(step, judge.tokenizer.eos_token_id, 12)
        assert out["meta"]["text"] == judge.tokenizer.decode(new, skip_special_tokens=True)
        by_hand.assert_label_logprobs(out["logprobs"], steps[out["meta"]["position"]], vocab)
