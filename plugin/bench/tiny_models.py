"""Tiny, randomly initialised judges built locally (no download), for ``judgecp bench capture`` and the tests.

``build_tiny_llama`` writes a 2-layer LlamaForCausalLM with a byte-level BPE
tokenizer trained on the spot; ``build_tiny_llava`` adds a 2-layer CLIP vision
tower and an image processor that works without torchvision. ``tiny_judge``
builds either in memory, straight on a device and in a dtype (a GPU bench
builds a billion-parameter random judge in seconds, with nothing written to
disk), and ``text_model_of`` gives a LLaVA's language model as a text-only
causal LM sharing its weights. Their judgements are noise: they exist to
exercise the harness path, never to be evaluated.

No harness is imported (the lm-eval tests, the core's tests and the lm-eval
adapter's ``judgecp bench capture`` use it); torch, transformers and
tokenizers are imported when a model is built, and a missing one is an
install hint (:func:`judgecp.base.errors.require`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from judgecp.base.errors import require

#: Text the tokenizer is trained on: digits, option letters, the rating words and the prompt vocabulary.
_CORPUS = [
    "Score: 1 Score: 2 Score: 3 Score: 4 Score: 5 score rating 1 2 3 4 5",
    # " A".." J" become single tokens, as in real judges' vocabularies (one pass per document).
    " ".join(f"Answer: {letter}" for letter in "ABCDEFGHIJ" * 3),
    "Please serve as an unbiased judge in assessing the quality of the response from an AI assistant",
    "regarding the user's instruction and the provided image. Evaluation steps: Scoring rubric:",
    "Poor (1) Fair (2) Average (3) Good (4) Excellent (5) The response caption image analysis",
    "[The Start of User Instruction] [The End of User Instruction] [The Start of Assistant's Answer]",
    "Output format: First, provide your analysis of the image and the response. Then, at the very end",
    "0123456789 .,:;!?()[]{}\"' -_/\n",
]

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<pad>", "<image>")


def train_tokenizer(extra_text: Iterable[str] = (), vocab_size: int = 400) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` (tokens look like ``"Ġ4"``)."""
    transformers: Any = require("transformers", "lm-eval", "building a tiny local judge")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([*_CORPUS, *extra_text], trainer=trainer)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image>"},
    )


def _llama_config(tokenizer: Any, hidden: int, layers: int, max_positions: int) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(4, hidden // 64),
        num_key_value_heads=max(4, hidden // 64),
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def build_tiny_llama(path: str | Path, **options: Any) -> Path:
    """Save a random tiny LlamaForCausalLM and its tokenizer to ``path``.

    ``options``: ``hidden`` (64), ``layers`` (2), ``max_positions`` (2048),
    ``seed`` (0); ``prepare`` (None): called with the model and its tokenizer
    before saving (the tests script the answer with it:
    ``tests/lm_eval/scripted.py``); ``vocab`` (None) widens the output layer
    to a real judge's vocabulary size (see :func:`pad_vocabulary`).
    """
    return _build(Path(path), None, **options)


def build_tiny_llava(path: str | Path, *, image_size: int = 32, patch_size: int = 8, **options: Any) -> Path:
    """Save a random tiny LLaVA (CLIP vision tower + Llama) with a PIL-only processor to ``path``.

    ``options``: those of :func:`build_tiny_llama`, for its language model
    (the vision tower has as many layers).
    """
    return _build(Path(path), {"image_size": image_size, "patch_size": patch_size}, **options)


def tiny_judge(
    *, vision: bool = False, hidden: int = 64, layers: int = 2, max_positions: int = 2048, seed: int = 0,
    prepare: Callable[[Any, Any], None] | None = None, vocab: int | None = None, device: str = "cpu",
    dtype: Any = None, image_size: int = 32, patch_size: int = 8,
) -> tuple[Any, Any]:
    """A random tiny Llama (or with ``vision`` a tiny LLaVA around it) and its tokenizer (or processor), in memory.

    The weights are created on ``device`` in ``dtype`` (a torch dtype or its
    name; default float32), never on the host first. ``prepare`` and
    ``vocab`` as in :func:`build_tiny_llama`.
    """
    require("torch", "torch", "building a tiny local judge")
    import torch

    tokenizer = train_tokenizer()
    text = _llama_config(tokenizer, hidden, layers, max_positions)
    wanted = getattr(torch, dtype) if isinstance(dtype, str) else (dtype or torch.float32)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(wanted)
    try:
        with torch.device(device):
            if not vision:
                from transformers import LlamaForCausalLM

                torch.manual_seed(seed)
                model: Any = LlamaForCausalLM(text)
                processor: Any = tokenizer
            else:
                model, processor = _llava(tokenizer, text, layers, seed, image_size=image_size, patch_size=patch_size)
            if prepare is not None:
                prepare(model, tokenizer)
            if vocab is not None:
                pad_vocabulary(model, tokenizer, vocab)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.train(False)
    return model, processor


def text_model_of(llava: Any) -> Any:
    """A LLaVA's language model and output layer as a text-only ``LlamaForCausalLM`` (the same weights, no copy)."""
    import copy

    import torch
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        text = LlamaForCausalLM(llava.config.text_config)
    text.model = llava.model.language_model
    text.lm_head = llava.lm_head
    text.generation_config = copy.deepcopy(llava.generation_config)
    text.train(False)
    return text


def _build(path: Path, vision: dict[str, Any] | None, **options: Any) -> Path:
    """A tiny Llama, or with ``vision`` a tiny LLaVA around it (:func:`tiny_judge`), saved with its tokenizer or
    processor."""
    settings: dict[str, Any] = {**(vision or {}), **options}
    model, processor = tiny_judge(vision=vision is not None, **settings)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


def _llava(tokenizer: Any, text: Any, layers: int, seed: int, *, image_size: int,
           patch_size: int) -> tuple[Any, Any]:
    """A LLaVA with a ``layers``-layer CLIP vision tower around the language model ``text``, and its processor."""
    import torch
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    transformers: Any = require("transformers", "lm-eval", "building a tiny local judge")

    vision = transformers.CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch_size,
        projection_dim=32,
    )
    config = transformers.LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(seed)
    model = transformers.LlavaForConditionalGeneration(config)
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": image_size},
        crop_size={"height": image_size, "width": image_size},
    )
    processor = transformers.LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )
    return model, processor


def pad_vocabulary(model: Any, tokenizer: Any, vocab: int) -> None:
    """Widen the embeddings and output layer to ``vocab`` rows, as large as a real judge's.

    The tokenizer stays small (it is trained on a few lines); the rows past it
    are suppressed in generation (``generation_config.suppress_tokens``), so
    every generated id decodes, while each step's logits and log-softmax run
    over the full width, which is what capture costs scale with.
    """
    known = len(tokenizer)
    if vocab < known:
        raise ValueError(f"vocab={vocab} is smaller than the tokenizer's {known} tokens")
    model.resize_token_embeddings(vocab)
    model.generation_config.suppress_tokens = list(range(known, vocab))
