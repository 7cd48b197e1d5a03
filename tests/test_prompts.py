"""One prompt text per benchmark for both harnesses (judgecp.data.prompts): the same item judged in
lm-eval and in VLMEvalKit sees the same words."""

from __future__ import annotations

from judgecp.adapters.vlmeval import specs
from judgecp.data import prompts


def test_likert_prompts_are_the_core_texts_in_both_harnesses() -> None:
    from judgecp.tasks.mllm_judge_cp import utils as mllm
    from judgecp.tasks.polaris_cp import utils as polaris

    doc = {"question": "What is {x}?", "answer": "A cat.", "caption": "A cat on a mat."}
    assert mllm.doc_to_text(doc) == "<image>\n" + prompts.MLLM_JUDGE_PROMPT.format(question=doc["question"],
                                                                                  actor_answer=doc["answer"])
    assert polaris.doc_to_text(doc) == "<image>\n" + prompts.POLARIS_PROMPT.format(caption=doc["caption"])
    assert specs.MLLM_JUDGE.prompt is prompts.MLLM_JUDGE_PROMPT and specs.POLARIS.prompt is prompts.POLARIS_PROMPT
    # the seed's layout: a blank line between rubric bullets, the quotes around Score: X
    assert "\n\n• Fair (2)" in prompts.MLLM_JUDGE_PROMPT and "‘‘Score: X’’" in prompts.POLARIS_PROMPT


def test_a_pair_reads_the_same_in_lm_eval_and_vlmevalkit() -> None:
    question, a, b = "What is {x}?", "It is 4.", "Four, surely."
    lm_eval = (
        prompts.PAIRWISE_SYSTEM_SINGLE_TURN + "\n\n" + prompts.pairwise_user_turn([question], [a], [b])
    )  # system turn, then user turn
    vlmeval = specs.MLLM_JUDGE_PAIR.prompt.format(question=question, response_a=a, response_b=b)  # one user turn
    assert lm_eval == vlmeval
    assert "position biases" in vlmeval and "Output only the letter, without any explanation." in vlmeval


def test_the_multiple_choice_prompt_lists_the_options_and_asks_for_the_letter() -> None:
    text = prompts.multiple_choice_prompt("Which colour? {x}", [("A", "red"), ("B", "blue"), ("D", "green")])
    assert text.splitlines() == ["Question: Which colour? {x}", "Options:", "A. red", "B. blue", "D. green",
                                 prompts.OPTION_LETTER_INSTRUCTION]
    row = {"index": 3, "question": "Which colour? {x}", "A": "red", "B": "blue", "C": float("nan"), "D": "green"}
    assert specs.PARC.render(row) == text  # the PARC datasets' prompt, empty options left out
