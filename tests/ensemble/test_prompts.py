"""The prompt-set builder and its shipped parts."""

from __future__ import annotations

import re

import pytest

from judgecp.base.errors import InputError
from judgecp.data.ensemble.prompts import (
    build_prompt_set,
    load_parts,
    main,
    read_prompt_set,
    write_prompt_set,
)
from tests.helpers import REPO

SEED = REPO.parent / "shared" / "seeds" / "bayesian-prompt-ensembles-supplement.txt"


def words(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\n- ", " ")).strip()


def test_sample_prompt_is_the_supplements_word_for_word():
    if not SEED.exists():
        pytest.skip(f"{SEED} is absent: the check needs ../shared/seeds beside the checkout")
    text = SEED.read_text("utf-8")
    start = text.index("You are a technical expert")
    end = text.index("C. Derivation")
    sample = next(p for p in build_prompt_set() if p.id == "supplement-sample")
    assert words(sample.render()) == words(text[start:end])


def test_every_base_prompt_comes_in_four_rekeyed_versions():
    parts = load_parts()
    prompts = build_prompt_set()
    n_base = len(parts["personas"]) * len(parts["templates"]) * len(parts["criteria"])
    assert len(prompts) == 1 + 4 * n_base
    assert len({p.id for p in prompts}) == len(prompts)
    versions = [p for p in prompts if p.id.startswith("photographer.supplement-sample.alignment.")]
    keys = {p.id.rsplit(".", 2)[-2] + "." + p.id.rsplit(".", 1)[-1]: p.answer_key for p in versions}
    assert keys == {
        "orig.AB": {"A": "A", "B": "B"},
        "orig.III": {"I": "A", "II": "B"},
        "flip.AB": {"A": "B", "B": "A"},
        "flip.III": {"I": "B", "II": "A"},
    }
    flipped = next(p for p in versions if p.id.endswith("flip.III"))
    assert flipped.flipped and flipped.order == ("B", "A")
    text = flipped.render("a red bicycle", ("<img:B>", "<img:A>"))
    assert "I) I prefer the first image." in text and "II) I prefer the second image." in text
    assert text.index("<img:B>") < text.index("<img:A>") and "Caption: a red bicycle" in text
    assert "You are a photographer skilled in assessing lighting" in text


def test_selection_and_no_augmentation():
    prompts = build_prompt_set(personas=["art-historian"], criteria=["aesthetics"], augment=False)
    assert [p.id for p in prompts] == [
        "supplement-sample",
        "art-historian.supplement-sample.aesthetics.orig.AB",
        "art-historian.caption-first.aesthetics.orig.AB",
    ]
    with pytest.raises(InputError, match="unknown persona 'poet'"):
        build_prompt_set(personas=["poet"])


def test_round_trip_and_command(tmp_path):
    prompts = build_prompt_set(templates=["caption-first"])
    write_prompt_set(prompts, tmp_path / "set.json")
    assert read_prompt_set(tmp_path / "set.json") == prompts
    assert main([str(tmp_path / "cli.json"), "--persona", "photographer", "--no-augment"]) == 0
    assert len(read_prompt_set(tmp_path / "cli.json")) == 1 + 2 * 3
    (tmp_path / "bad.json").write_text('{"schema": "other"}')
    with pytest.raises(InputError, match="schema"):
        read_prompt_set(tmp_path / "bad.json")
