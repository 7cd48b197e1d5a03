"""The OpenAI-compatible judge against a real HTTP server on 127.0.0.1 that the test starts."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judgecp.adapters.vlmeval.api_judge import FAIL_MSG, JudgeCPOpenAI
from judgecp.adapters.vlmeval.runtime import PROMPTS, prediction_sha1, run_context
from judgecp.data.extraction import DEFAULT_FLOOR
from tests.json_server import JSONServer
from tests.vlmeval.sources import png_bytes

#: A chat completion whose last tokens are "Score", ":", " 4"; at " 4" the top-3 omit "1" and "5".
TOKENS = [
    {"token": "The", "logprob": -0.1, "top_logprobs": [{"token": "The", "logprob": -0.1}]},
    {"token": " answer", "logprob": -0.3, "top_logprobs": [{"token": " answer", "logprob": -0.3}]},
    {
        "token": " is",
        "logprob": -0.2,
        "top_logprobs": [{"token": " is", "logprob": -0.2}, {"token": " 2", "logprob": -3.0}],
    },
    {"token": " good", "logprob": -0.5, "top_logprobs": [{"token": " good", "logprob": -0.5}]},
    {"token": ".\n", "logprob": -0.1, "top_logprobs": [{"token": ".\n", "logprob": -0.1}]},
    {"token": "Score", "logprob": -0.01, "top_logprobs": [{"token": "Score", "logprob": -0.01}]},
    {"token": ":", "logprob": -0.01, "top_logprobs": [{"token": ":", "logprob": -0.01}]},
    {
        "token": " 4",
        "logprob": -0.4,
        "top_logprobs": [
            {"token": " 4", "logprob": -0.4},
            {"token": " 3", "logprob": -1.3},
            {"token": "4", "logprob": -2.5},
            {"token": " 2", "logprob": -4.0},
        ],
    },
]


class Server(JSONServer):
    """The chat completions endpoint at ``/v1/chat/completions``: 503 while ``fail_first`` lasts, 404 elsewhere."""

    def __init__(self) -> None:
        super().__init__(self.answer)
        self.fail_first = 0
        self.with_logprobs = True
        self.tokens = TOKENS

    def answer(self, body: dict[str, Any], path: str, headers: dict[str, str]) -> dict[str, Any] | int:
        if self.fail_first > 0:
            self.fail_first -= 1
            return 503
        if path != "/v1/chat/completions":
            return 404
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": "".join(t["token"] for t in self.tokens)},
            "finish_reason": "stop",
        }
        if self.with_logprobs:
            choice["logprobs"] = {"content": self.tokens}
        return {"id": "x", "object": "chat.completion", "choices": [choice]}


@pytest.fixture
def server() -> Iterator[tuple[Server, str]]:
    with Server() as state:
        yield state, f"{state.url}/v1"


@pytest.fixture
def message(tmp_path: Path) -> list[dict[str, str]]:
    image = tmp_path / "7.png"
    image.write_bytes(png_bytes(4, 4, (255, 0, 0)))
    return [{"type": "image", "value": str(image)}, {"type": "text", "value": "Judge this. Score: X"}]


def test_request_and_record(server: tuple[Server, str], message: list[dict[str, str]], tmp_path: Path) -> None:
    state, url = server
    judge = JudgeCPOpenAI(model="judge-7b", api_base=url, key="sk-test", top_logprobs=5, max_tokens=64)
    PROMPTS.register("MLLMJudge_CP", message, "7")
    with run_context(tmp_path, "judge-7b"):
        out = judge.generate(message, dataset="MLLMJudge_CP")
    body = state.requests[0]["body"]
    assert body["logprobs"] is True and body["top_logprobs"] == 5 and body["temperature"] == 0.0
    assert body["model"] == "judge-7b" and body["max_tokens"] == 64
    content = body["messages"][0]["content"]
    assert content[0]["type"] == "image_url"
    assert base64.b64decode(content[0]["image_url"]["url"].split(",", 1)[1]) == png_bytes(4, 4, (255, 0, 0))
    assert content[1] == {"type": "text", "text": "Judge this. Score: X"}
    assert state.requests[0]["headers"]["Authorization"] == "Bearer sk-test"

    record = json.loads(out["extra_records"])
    assert out["prediction"].endswith("Score: 4")
    assert record["shape"] == "score" and record["prediction"] == 4 and record["meta"]["stage"] == "anchored"
    assert record["meta"]["source"] == "openai_api"
    lp = record["logprobs"]
    assert lp["4"] == pytest.approx(math.log(math.exp(-0.4) + math.exp(-2.5)))  # " 4" and "4" merged
    assert lp["3"] == pytest.approx(-1.3) and lp["2"] == pytest.approx(-4.0)
    assert lp["1"] == pytest.approx(DEFAULT_FLOOR) and lp["5"] == pytest.approx(DEFAULT_FLOOR)  # not in the top-k
    assert "missing_token" in record["flags"]
    assert record["id"] == "7" and record["meta"]["prediction_sha1"] == prediction_sha1(out["prediction"])
    side = json.loads((tmp_path / "judge-7b_MLLMJudge_CP_lprecords.jsonl").read_text())
    assert side["logprobs"] == lp


def test_retry_then_success_and_plain_text_elsewhere(server: tuple[Server, str], message: list[dict[str, str]]) -> None:
    state, url = server
    state.fail_first = 2
    judge = JudgeCPOpenAI(model="m", api_base=url + "/chat/completions", retry=3, wait=0.01)
    out = judge.generate(message, dataset="MMBench_DEV_EN")
    assert isinstance(out, str) and out.endswith("Score: 4")
    assert len(state.requests) == 3


def test_failure_and_missing_logprobs(server: tuple[Server, str], message: list[dict[str, str]]) -> None:
    state, url = server
    state.fail_first = 5
    judge = JudgeCPOpenAI(model="m", api_base=url, retry=2, wait=0.01)
    out = judge.generate(message, dataset="Polaris_CP")
    assert isinstance(out, str) and out.startswith(FAIL_MSG)  # VLMEvalKit retries these on the next run
    state.fail_first = 0
    state.with_logprobs = False
    record = json.loads(judge.generate(message, dataset="Polaris_CP")["extra_records"])
    assert record["logprobs"] is None and record["flags"] == ["api_no_logprobs"]
    closed = JudgeCPOpenAI(model="m", api_base="http://127.0.0.1:9/v1", retry=1, timeout=2)
    assert closed.generate(message, dataset="Polaris_CP").startswith(FAIL_MSG)


#: A one-letter verdict: " B", with " A" and "A" among the alternatives, "C" absent.
LETTER_TOKENS = [
    {"token": " B", "logprob": -0.3, "top_logprobs": [
        {"token": " B", "logprob": -0.3}, {"token": " A", "logprob": -1.6}, {"token": "A", "logprob": -3.2},
    ]},
]


def test_letter_answers(server: tuple[Server, str], message: list[dict[str, str]], tmp_path: Path) -> None:
    """Pairwise verdicts and VLMEvalKit multiple choice: log P of the letters at the first generated letter."""
    from judgecp.adapters.vlmeval.runtime import mark_mcq, register_prompt

    state, url = server
    state.tokens = LETTER_TOKENS
    judge = JudgeCPOpenAI(model="judge-7b", api_base=url, top_logprobs=5)
    PROMPTS.register("MLLMJudgePair_CP", message, "3")
    mark_mcq("TinyMCQ_api")
    register_prompt("TinyMCQ_api", message, {"index": 9, "A": "x", "B": "y", "C": "z"})
    with run_context(tmp_path, "judge-7b"):
        out = judge.generate(message, dataset="MLLMJudgePair_CP")
        plain = judge.generate(message, dataset="TinyMCQ_api")
    record = json.loads(out["extra_records"])
    assert record["shape"] == "pair" and record["prediction"] == "B" and record["id"] == "3"
    assert record["logprobs"]["B"] == pytest.approx(-0.3)
    assert record["logprobs"]["A"] == pytest.approx(math.log(math.exp(-1.6) + math.exp(-3.2)))
    assert plain == " B"  # VLMEvalKit's own benchmark: plain text, the record in the sidecar
    (mcq,) = [json.loads(x) for x in (tmp_path / "judge-7b_TinyMCQ_api_lprecords.jsonl").read_text().splitlines()]
    assert mcq["shape"] == "choice" and mcq["meta"]["letters"] == ["A", "B", "C"] and mcq["id"] == "9"
    assert mcq["logprobs"]["C"] == pytest.approx(DEFAULT_FLOOR) and mcq["flags"] == ["missing_token"]
