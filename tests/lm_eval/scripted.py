"""Scripting a tiny random judge's answer, for the tests' end-to-end runs (test scaffolding, not shipped).

:func:`script_judge` makes a model built by
:mod:`judgecp.bench.tiny_models` (``prepare=``) answer a fixed
text, so the chain-of-thought tests have a score for the extractor to find.
:func:`tiny_llava` is the scripted LLaVA of the lm-eval and the lmms-eval
tests: each folder's conftest imports the fixture and defines the
``harness_ready`` fixture it needs (skipping without that harness).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from judgecp.bench.tiny_models import build_tiny_llava

#: What the scripted tiny judges answer after a prompt that ends in ".".
SCRIPT = " Fine Score: 3"


@pytest.fixture(scope="session")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory, harness_ready: None) -> Path:
    """A random 2-layer LLaVA (CLIP tower + Llama) built here, scripted to answer SCRIPT."""
    folder = tmp_path_factory.mktemp("models") / "llava"
    return build_tiny_llava(folder, prepare=lambda m, t: script_judge(m, t, SCRIPT))


def script_judge(
    model: object,
    tokenizer: object,
    script: str,
    *,
    after: str = ".",
    strength: float = 12.0,
    context_scale: float = 0.5,
    noise: float = 5.0,
) -> list[int]:
    """Make a random tiny model answer ``script`` (then end of sequence) after a prompt ending in ``after``.

    The language model's residual branches are scaled down by
    ``context_scale`` (so its hidden state is mostly the current token's
    embedding, slightly moved by the context and the image) and its output
    layer is set to a bigram chain ``after -> script tokens -> </s>`` on top
    of its random weights times ``noise``. Its greedy output is then the
    script, and the other tokens' logprobs still vary with the document, as
    a judge's would. Returns the chain's ids.
    """
    import torch

    lm_head = model.get_output_embeddings()  # type: ignore[attr-defined]
    embeddings = model.get_input_embeddings().weight  # type: ignore[attr-defined]
    language_model = getattr(model, "model", model)
    language_model = getattr(language_model, "language_model", language_model)
    with torch.no_grad():
        for name, param in language_model.named_parameters():
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                param.mul_(context_scale)
        hidden = language_model.norm(embeddings)
        chain = [tokenizer(after, add_special_tokens=False)["input_ids"][-1]]  # type: ignore[operator]
        chain += tokenizer(script, add_special_tokens=False)["input_ids"]  # type: ignore[operator]
        chain.append(tokenizer.eos_token_id)  # type: ignore[attr-defined]
        if len(set(chain)) != len(chain):
            raise ValueError(f"the script's tokens must not repeat (nor the trigger): {chain}")
        weight = lm_head.weight * noise
        for a, b in itertools.pairwise(chain):
            h = hidden[a]
            weight[b] += strength * h / h.dot(h)
        lm_head.weight.copy_(weight)
    return chain
