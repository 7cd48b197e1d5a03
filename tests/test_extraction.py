"""Score-token extraction on outputs of locally trained tokenizers of both shapes."""

from __future__ import annotations

import math

import pytest

from judgecp.base.scale import LikertScale
from judgecp.data.extraction import (
    DEFAULT_FLOOR,
    FLAG_BACKWARD,
    FLAG_KEYWORD,
    FLAG_MISSING_TOKEN,
    FLAG_NAN,
    FLAG_NO_SCORE,
    extract,
    extract_score,
    normalize_token,
    openai_logprob_positions,
    token_text,
)

tokenizers = pytest.importorskip("tokenizers")

CORPUS = [
    "The response is good. Score: 4",
    "Score: 3 for the chart. Step 2: compare 5 bars.",
    "My rating is 2 out of 5. Final Score: 1\n",
    "score 45 and 4.5 points, rating 3, 12 items",
    "I would give it 5 because the image shows 2 dogs. Score: **5**",
] * 40


@pytest.fixture(scope="module", params=["bytelevel", "sentencepiece"])
def tokenizer(request: pytest.FixtureRequest) -> object:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if request.param == "bytelevel":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(
            CORPUS, trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        )
    else:
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        tok.train_from_iterator(
            CORPUS, trainers.UnigramTrainer(vocab_size=120, special_tokens=["<unk>"], unk_token="<unk>")
        )
    return tok


def judge(
    tokenizer: object, text: str, score_lp: dict[str, float] | None = None
) -> tuple[list[str], list[dict[str, float]]]:
    """Tokens of ``text`` and per-position candidates: the generated token at -0.05,
    plus, at every position, the given label logprobs in the tokenizer's own
    spelling (so the extractor must find the right position to read them)."""
    tokens = tokenizer.encode(text).tokens  # type: ignore[attr-defined]
    vocab = tokenizer.get_vocab()  # type: ignore[attr-defined]
    positions = []
    for tok in tokens:
        cand = {tok: -0.05}
        if score_lp is not None and normalize_token(tok) in score_lp:
            for label, lp in score_lp.items():
                if label == normalize_token(tok):
                    continue
                for variant in (label, "Ġ" + label, "▁" + label):
                    if variant in vocab and variant != tok:
                        cand[variant] = lp
                        break
                else:
                    cand.setdefault(label, lp)
            cand[tok] = score_lp[normalize_token(tok)]
        positions.append(cand)
    return tokens, positions


LP = {"1": -6.0, "2": -4.0, "3": -2.5, "4": -0.2, "5": -1.9}


def test_anchored_score(tokenizer: object) -> None:
    tokens, pos = judge(tokenizer, "The chart shows 5 bars. Step 2: compare them.\nScore: 4", LP)
    r = extract(tokens, pos)
    assert r.stage == "anchored" and r.parsed == 4 and r.flags == ()
    assert r.logprobs is not None
    assert r.logprobs["4"] == pytest.approx(-0.2)
    assert r.logprobs["1"] == pytest.approx(-6.0)


def test_last_anchor_wins(tokenizer: object) -> None:
    tokens, pos = judge(tokenizer, "Score: 3 for relevance, but overall.\nFinal Score: 4", LP)
    r = extract(tokens, pos)
    assert r.stage == "anchored" and r.parsed == 4
    assert tokens[r.position].endswith("4")  # type: ignore[index]


def test_markdown_between_anchor_and_digit(tokenizer: object) -> None:
    tokens, pos = judge(tokenizer, "The image shows 2 dogs. Score: **5**", LP)
    r = extract(tokens, pos)
    assert r.stage == "anchored" and r.parsed == 5


def test_keyword_anchor(tokenizer: object) -> None:
    tokens, pos = judge(tokenizer, "Step 1 done. My rating is 2 out of 5 for sure", LP)
    r = extract(tokens, pos)
    assert r.stage == "keyword" and r.parsed == 2 and FLAG_KEYWORD in r.flags


def test_backward_scan(tokenizer: object) -> None:
    tokens, pos = judge(tokenizer, "Step 2: compare the 5 bars; I give it 3", LP)
    r = extract(tokens, pos)
    assert r.stage == "backward" and r.parsed == 3 and FLAG_BACKWARD in r.flags


def test_numbers_are_not_ratings(tokenizer: object) -> None:
    tokens, pos = judge(tokenizer, "Score: 45 and 4.5 points, 12 items", LP)
    r = extract(tokens, pos)
    assert not r.ok and r.flags == (FLAG_NO_SCORE,) and r.logprobs is None


def test_no_score(tokenizer: object) -> None:
    tokens, pos = judge(tokenizer, "I cannot judge this response.", LP)
    r = extract(tokens, pos)
    assert not r.ok and FLAG_NO_SCORE in r.flags


def test_missing_and_nan_tokens_get_the_floor() -> None:
    tokens = ["Score", ":", "Ġ4"]
    pos = [{"Score": -0.1}, {":": -0.1}, {"Ġ4": -0.3, "Ġ5": -1.5, "Ġ3": float("nan")}]
    r = extract(tokens, pos)
    assert r.logprobs == {"1": DEFAULT_FLOOR, "2": DEFAULT_FLOOR, "3": DEFAULT_FLOOR, "4": -0.3, "5": -1.5}
    assert FLAG_MISSING_TOKEN in r.flags and FLAG_NAN in r.flags
    assert set(r.floored) == {"1", "2", "3"}
    assert DEFAULT_FLOOR == pytest.approx(math.log(1e-5))
    custom = extract(tokens, pos, floor=-15.0)
    assert custom.logprobs is not None and custom.logprobs["1"] == -15.0


def test_token_variants_are_combined() -> None:
    tokens = ["▁Score", ":", "▁4"]
    pos = [{}, {}, {"▁4": -1.0, "4": -1.0, "▁5": -2.0}]
    r = extract(tokens, pos)
    assert r.logprobs is not None
    assert r.logprobs["4"] == pytest.approx(-1.0 + math.log(2))


def test_full_vocabulary_values_are_not_floored() -> None:
    tokens = ["Score", ":", " 4"]
    pos = [{}, {}, {" 1": -30.0, " 2": -25.0, " 3": -9.0, " 4": -0.01, " 5": -5.0}]
    r = extract(tokens, pos)
    assert r.logprobs is not None and r.logprobs["1"] == -30.0 and r.floored == ()


def test_normalisation_of_markers() -> None:
    assert normalize_token("Ġ4") == normalize_token("▁4") == normalize_token(" 4") == normalize_token("4") == "4"
    assert token_text("Ċ", "bytelevel") == "\n"
    assert token_text("<0x0A>", "sentencepiece") == "\n"


def test_openai_wire_format() -> None:
    logprobs = {
        "content": [
            {"token": "Score", "logprob": -0.1, "top_logprobs": [{"token": "Score", "logprob": -0.1}]},
            {"token": ":", "logprob": -0.2, "top_logprobs": []},
            {
                "token": " 4",
                "logprob": -0.3,
                "top_logprobs": [{"token": " 5", "logprob": -1.6}, {"token": " 3", "logprob": None}],
            },
            {"token": " 2", "logprob": None},
        ]
    }
    parsed = openai_logprob_positions(logprobs)
    assert parsed is not None
    tokens, positions = parsed
    assert tokens == ["Score", ":", " 4", " 2"]
    # the sampled token joins its top-k list; entries without a logprob are left out
    assert positions == [{"Score": -0.1}, {":": -0.2}, {" 5": -1.6, " 4": -0.3}, {}]
    r = extract(tokens, positions)
    assert r.logprobs is not None and r.logprobs["4"] == -0.3 and r.logprobs["3"] == DEFAULT_FLOOR
    assert FLAG_MISSING_TOKEN in r.flags
    assert openai_logprob_positions(None) is None
    assert openai_logprob_positions({"content": None}) is None


def test_other_scale() -> None:
    """A 1-10 scale reads "10" as one token and fills its labels; "10" split into digits is not a score of 1."""
    scale = LikertScale(1, 10)
    r = extract(["Score", ":", " 10"], [{}, {}, {" 10": -0.1, " 9": -2.3, " 1": -4.0}], scale=scale)
    assert r.ok and r.parsed == 10 and r.position == 2
    assert r.logprobs is not None and list(r.logprobs) == [str(k) for k in range(1, 11)]
    assert (r.logprobs["10"], r.logprobs["9"], r.logprobs["1"]) == (-0.1, -2.3, -4.0)
    assert r.floored == tuple(str(k) for k in range(2, 9)) and r.logprobs["5"] == DEFAULT_FLOOR
    split = extract(["Score", ":", " 1", "0"], [{}, {}, {" 1": -0.1}, {"0": -0.1}], scale=scale)
    assert not split.ok and split.logprobs is None and split.parsed is None and split.flags == ("no_score",)


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="tokens"):
        extract(["a", "b"], [{}])


def test_hook_runs_the_builtin_last(tokenizer: object) -> None:
    tokens, pos = judge(tokenizer, "Score: 4", LP)
    assert extract_score(tokens, pos) == extract(tokens, pos)
