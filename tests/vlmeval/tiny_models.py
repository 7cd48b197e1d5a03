"""Tiny local models for the VLMEvalKit tests: nothing comes from the Hugging Face hub.

* :func:`train_tokenizer`: a byte-level BPE tokenizer trained with the
  ``tokenizers`` library on the judge prompts (so prompts are a few hundred
  tokens) plus Idefics3's special tokens;
* :func:`tiny_llama`: a randomly initialised ``LlamaForCausalLM`` (text judge);
* :func:`tiny_idefics3`: an ``Idefics3ForConditionalGeneration`` (SigLIP-style
  vision + Llama) with its processor and chat template, the architecture of
  VLMEvalKit's ``DOCLING`` wrapper (``granite-docling-258M``), which loads it
  from a local path on CPU. :func:`teach_score_format` trains it for a few
  seconds to answer ``Score: N`` so that the extractor's anchored stage has
  something to find (the digit stays uncertain: the targets are random);
  with ``task="letters"`` :func:`teach_letter_format` trains it instead to
  answer a single letter to the pairwise prompt ("A"/"B"), PARC's
  multiple-choice prompt and VLMEvalKit's own multiple-choice prompt (the
  letter stays uncertain: the targets are random).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judgecp.data.prompts import (
    MLLM_JUDGE_PROMPT,
    PAIRWISE_PROMPT,
    POLARIS_PROMPT,
    multiple_choice_prompt,
)

IDEFICS3_SPECIAL = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"] + [
    f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)
]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] | capitalize }}:"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<image>"
    "{% else %}{{ item['text'] }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}"
)
WORDS = (
    "the a image shows chart answer response question caption dog cat red blue table value "
    "score rating good poor fair average excellent figure text number analysis final"
).split()


def corpus(letters: bool = False) -> list[str]:
    lines = [MLLM_JUDGE_PROMPT, POLARIS_PROMPT, "User: Assistant: Score: 1 2 3 4 5"]
    rng = random.Random(0)
    for _ in range(200):
        lines.append(" ".join(rng.choice(WORDS) for _ in range(12)) + f" Score: {rng.randint(1, 5)}")
    if letters:
        rng = random.Random(1)
        lines += [PAIRWISE_PROMPT, VLMEVAL_MCQ_SUFFIX, "Question: Options: Only respond with the option letter."]
        lines += [f"Assistant: {rng.choice('ABCD')}" for _ in range(100)]
    return lines


#: The closing sentence of VLMEvalKit's own multiple-choice prompt (``ImageMCQDataset.build_prompt``).
VLMEVAL_MCQ_SUFFIX = "Please select the correct answer from the options above."


def train_tokenizer(special: list[str] | None = None, letters: bool = False) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` (vocabulary ~600) with ``<end_of_utterance>`` as EOS."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = list(special or IDEFICS3_SPECIAL)
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=["<|pad|>", "<|bos|>", *special],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(letters), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|bos|>",
        eos_token="<end_of_utterance>",
        pad_token="<|pad|>",
        additional_special_tokens=special,
        model_input_names=["input_ids", "attention_mask"],
    )


def _llama_config(vocab_size: int, tokenizer: Any) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def tiny_llama(path: Path | None = None, seed: int = 0) -> tuple[Any, Any]:
    """A random tiny ``LlamaForCausalLM`` and its tokenizer (saved to ``path`` if given)."""
    import torch
    from transformers import LlamaForCausalLM

    tokenizer = train_tokenizer(special=["<end_of_utterance>"])
    torch.manual_seed(seed)
    model = LlamaForCausalLM(_llama_config(len(tokenizer), tokenizer)).eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if path is not None:
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    return model, tokenizer


def tiny_idefics3(path: Path, seed: int = 0, teach_steps: int = 150, task: str = "score") -> Path:
    """Save a tiny Idefics3 model + processor to ``path`` (VLMEvalKit's DOCLING loads it).

    ``task``: ``"score"`` (answers ``Score: N``) or ``"letters"`` (answers one letter).
    """
    import torch
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
    )

    if task not in ("score", "letters"):
        raise ValueError(f"task must be 'score' or 'letters', got {task!r}")
    tokenizer = train_tokenizer(letters=task == "letters")
    image_processor = Idefics3ImageProcessor(
        do_image_splitting=False, size={"longest_edge": 32}, max_image_size={"longest_edge": 32}
    )
    processor = Idefics3Processor(image_processor, tokenizer, image_seq_len=1, chat_template=CHAT_TEMPLATE)
    tokenizer = processor.tokenizer
    config = Idefics3Config(
        text_config=_llama_config(len(tokenizer), tokenizer).to_dict(),
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 16},
        scale_factor=2,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.convert_tokens_to_ids("<end_of_utterance>")
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if teach_steps and task == "letters":
        teach_letter_format(model, processor, steps=teach_steps, seed=seed)
    elif teach_steps:
        teach_score_format(model, processor, steps=teach_steps, seed=seed)
    model.eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


def teach_score_format(model: Any, processor: Any, steps: int = 120, seed: int = 0) -> None:
    """A few Adam steps so the model answers ``Score: N<end_of_utterance>`` (N random per example)."""

    def example(rng: random.Random) -> tuple[str, str]:
        question = " ".join(rng.choice(WORDS) for _ in range(8))
        answer = " ".join(rng.choice(WORDS) for _ in range(10))
        return MLLM_JUDGE_PROMPT.format(question=question, actor_answer=answer), f" Score: {rng.randint(1, 5)}"

    _teach(model, processor, example, steps, seed)


def _teach(model: Any, processor: Any, example: Callable[[random.Random], tuple[str, str]], steps: int,
           seed: int) -> None:
    """``steps`` Adam steps on ``example(rng)``'s (prompt text, answer) pairs, each with a random image;
    the loss is on the answer and ``<end_of_utterance>`` only."""
    import numpy as np
    import torch
    from PIL import Image

    rng = random.Random(seed)
    gen = np.random.default_rng(seed)
    tokenizer = processor.tokenizer
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(steps):
        text, answer = example(rng)
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True)
        target = f"{answer}<end_of_utterance>"
        image = Image.fromarray(gen.integers(0, 255, (24, 24, 3), dtype=np.uint8))
        inputs = processor(text=prompt + target, images=[image], return_tensors="pt")
        n_target = len(tokenizer(target, add_special_tokens=False)["input_ids"])
        labels = inputs["input_ids"].clone()
        labels[:, :-n_target] = -100
        loss = model(**inputs, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def letter_prompt(rng: random.Random) -> tuple[str, str]:
    """A random pairwise, PARC or VLMEvalKit multiple-choice prompt and the letters it allows."""
    kind = rng.randrange(3)
    question = " ".join(rng.choice(WORDS) for _ in range(6)) + "?"
    if kind == 0:
        a, b = (" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(2))
        return PAIRWISE_PROMPT.format(question=question, response_a=a, response_b=b), "AB"
    letters = "ABCD"[: rng.randint(2, 4)]
    options = [(x, " ".join(rng.choice(WORDS) for _ in range(2))) for x in letters]
    if kind == 1:
        return multiple_choice_prompt(question, options), letters
    text = f"Question: {question}\nOptions:\n" + "".join(f"{x}. {t}\n" for x, t in options)
    return text + VLMEVAL_MCQ_SUFFIX, letters


def teach_letter_format(model: Any, processor: Any, steps: int = 150, seed: int = 0) -> None:
    """A few Adam steps so the model answers `` X<end_of_utterance>`` with X one of the prompt's letters."""

    def example(rng: random.Random) -> tuple[str, str]:
        text, letters = letter_prompt(rng)
        return text, f" {rng.choice(letters)}"

    _teach(model, processor, example, steps, seed)
