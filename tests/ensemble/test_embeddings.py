"""Embedding files, pair embeddings from a small local encoder, and the open_clip path's errors."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from judgecp.base.errors import InputError, MissingDependencyError
from judgecp.data.ensemble.embeddings import (
    CLIP_MODEL,
    CLIP_PRETRAINED,
    embed_pairs,
    open_clip_encoder,
    read_embeddings,
    write_embeddings,
)


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_round_trip(tmp_path, suffix):
    table = {"a": [1.0, 0.0, 2.0], "b": [0.5, 0.5, 0.5]}
    write_embeddings(table, tmp_path / f"e{suffix}")
    back = read_embeddings(tmp_path / f"e{suffix}")
    assert list(back) == ["a", "b"]
    np.testing.assert_allclose(back["a"], table["a"])


def test_bad_files_are_named(tmp_path):
    (tmp_path / "e.jsonl").write_text('{"item": "a", "embedding": [1, 2]}\n{"item": "a", "embedding": [1, 2]}\n')
    with pytest.raises(InputError, match=r"e.jsonl:2: item 'a' appears twice"):
        read_embeddings(tmp_path / "e.jsonl")
    (tmp_path / "f.jsonl").write_text('{"item": "a", "embedding": [1, 2]}\n{"item": "b", "embedding": [1]}\n')
    with pytest.raises(InputError, match="one length"):
        read_embeddings(tmp_path / "f.jsonl")
    np.savez(tmp_path / "g.npz", ids=np.array(["a"]), embedding=np.ones((1, 2)))
    with pytest.raises(InputError, match="lacks 'item'"):
        read_embeddings(tmp_path / "g.npz")
    with pytest.raises(InputError, match=r"\.npz or \.jsonl"):
        read_embeddings(_touch(tmp_path / "h.csv"))


def _touch(path):
    path.write_text("")
    return path


def colour_encoder(images):
    """A small local encoder: mean colour and colour spread of each PIL image."""
    arrays = [np.asarray(im, dtype=float) / 255.0 for im in images]
    return np.array([np.concatenate([a.mean(axis=(0, 1)), a.std(axis=(0, 1)) + 0.01]) for a in arrays])


def test_pair_embedding_is_order_invariant_and_separates_image_groups():
    from PIL import Image

    rng = np.random.default_rng(0)

    def image(base):
        pixels = np.clip(base + rng.normal(0, 10, size=(8, 8, 3)), 0, 255).astype(np.uint8)
        return Image.fromarray(pixels)

    reds = [(image([200, 20, 20]), image([180, 40, 30])) for _ in range(5)]
    blues = [(image([20, 20, 200]), image([30, 50, 190])) for _ in range(5)]
    emb = embed_pairs(reds + blues, colour_encoder, batch_size=3)
    assert emb.shape == (10, 6)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0)
    swapped = embed_pairs([(b, a) for a, b in reds], colour_encoder)
    np.testing.assert_allclose(swapped, emb[:5])
    within, across = emb[0] @ emb[1], emb[0] @ emb[7]
    assert within > across + 0.2
    with pytest.raises(InputError, match="encoder returned"):
        embed_pairs(reds, lambda images: np.ones((1, 3)))


def test_open_clip_missing_gives_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "open_clip", None)  # import fails
    with pytest.raises(MissingDependencyError, match=r"judgecp\[clip\]"):
        open_clip_encoder()


def test_missing_weights_give_a_clear_error(monkeypatch):
    calls = {}

    def create(model_name, pretrained=None, cache_dir=None, device="cpu"):
        calls.update(model=model_name, pretrained=pretrained)
        raise RuntimeError("Pretrained weights (laion2b_s34b_b88k) not found for model ViT-B-16.\nmore")

    monkeypatch.setitem(sys.modules, "open_clip", types.SimpleNamespace(create_model_and_transforms=create))
    with pytest.raises(InputError, match=r"ViT-B-16/laion2b_s34b_b88k are not available here .*--embeddings FILE"):
        open_clip_encoder()
    assert calls == {"model": CLIP_MODEL, "pretrained": CLIP_PRETRAINED}


def test_open_clip_encoder_plumbing_with_a_tiny_local_model(monkeypatch):
    torch = pytest.importorskip("torch")
    from PIL import Image

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(3, 4)

        def encode_image(self, batch):
            return self.proj(batch.mean(dim=(2, 3)))

    def preprocess(im):
        return torch.tensor(np.asarray(im, dtype=np.float32) / 255.0).permute(2, 0, 1)

    def create(model_name, pretrained=None, cache_dir=None, device="cpu"):
        torch.manual_seed(0)
        return Tiny(), None, preprocess

    monkeypatch.setitem(sys.modules, "open_clip", types.SimpleNamespace(create_model_and_transforms=create))
    encoder = open_clip_encoder()
    images = [Image.fromarray(np.full((4, 4, 3), v, dtype=np.uint8)) for v in (10, 200)]
    out = embed_pairs([(images[0], images[1])], encoder)
    assert out.shape == (1, 4) and np.isfinite(out).all()


def test_command_embeds_a_local_source(tmp_path, monkeypatch, capsys):
    from judgecp.data.ensemble.embeddings import main
    from tests.ensemble.test_sources import hpdv2_dir

    torch = pytest.importorskip("torch")

    class Tiny(torch.nn.Module):
        def encode_image(self, batch):
            return torch.cat([batch.mean(dim=(2, 3)), batch.std(dim=(2, 3)) + 0.1], dim=1)

    def preprocess(im):
        return torch.tensor(np.asarray(im, dtype=np.float32) / 255.0).permute(2, 0, 1)

    fake = types.SimpleNamespace(create_model_and_transforms=lambda *a, **k: (Tiny(), None, preprocess))
    monkeypatch.setitem(sys.modules, "open_clip", fake)
    out = tmp_path / "emb.npz"
    assert main(["--source", "hpdv2", "--root", str(hpdv2_dir(tmp_path)), "--out", str(out)]) == 0
    table = read_embeddings(out)
    assert sorted(table) == ["hpdv2-test-0-0-1", "hpdv2-test-0-1-2"]
    assert "2 items" in capsys.readouterr().out
    monkeypatch.setitem(sys.modules, "open_clip", None)
    assert main(["--source", "hpdv2", "--root", str(tmp_path), "--out", str(out)]) == 2
    assert "judgecp[clip]" in capsys.readouterr().err
