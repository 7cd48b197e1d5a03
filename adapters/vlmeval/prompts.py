"""VLMEvalKit's prompts: the judge prompts of :mod:`judgecp.prompts` (the same words as lm-eval's,
pairwise as one user turn) and PARC's multiple-choice prompt."""

from __future__ import annotations

from judgecp.prompts import MLLM_JUDGE_PROMPT as MLLM_JUDGE_PROMPT
from judgecp.prompts import PAIRWISE_PROMPT as PAIRWISE_PROMPT
from judgecp.prompts import POLARIS_PROMPT as POLARIS_PROMPT

#: The last line of the multiple-choice prompt of the PARC variation datasets.
OPTION_LETTER_INSTRUCTION = "Only respond with the option letter."


def multiple_choice_prompt(question: str, options: list[tuple[str, str]]) -> str:
    """PARC's multiple-choice prompt: the question, the options ``A. text`` one per line, the instruction.

    The layout is VLMEvalKit's own for multiple choice (``Question:``, ``Options:``), with
    its closing sentence replaced by :data:`OPTION_LETTER_INSTRUCTION`, so that the answer
    is the option letter the logprobs are read at.
    """
    lines = [f"Question: {question}", "Options:"]
    lines += [f"{letter}. {text}" for letter, text in options]
    lines.append(OPTION_LETTER_INSTRUCTION)
    return "\n".join(lines)
