"""Item embeddings for clustering: read from a file, or computed with open_clip.

Files (keyed by item id, the records' ``meta.item``):

* ``.npz``: arrays ``item`` (ids, strings) and ``embedding`` (items x dim);
* ``.jsonl``: one ``{"item": ID, "embedding": [floats]}`` object per line.

Computing them: :func:`embed_pairs` embeds each item's two images with an
*encoder* (any callable from a list of images to an (n x dim) array) and
uses the normalised mean of the two image embeddings, so both display orders
of a pair share one embedding. :func:`open_clip_encoder` is the supplement's
encoder, CLIP ViT-B-16 with the ``laion2b_s34b_b88k`` weights, from the
optional ``clip`` extra (``pip install judgecp[clip]``); when the weights are
not in the local cache and cannot be downloaded, it raises an
:class:`~judgecp.base.errors.InputError` saying so and how to pass embeddings
instead.

``python -m judgecp.data.ensemble.embeddings --source hpdv2 --root DIR --out FILE``
embeds the items of a preference source (:mod:`judgecp.data.ensemble.sources`;
ids as there, which the harness tasks use as ``meta.item``) with open_clip and
writes the table.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, MissingDependencyError, clip, require
from judgecp.base.outputs import atomic_writer
from judgecp.base.textfiles import BINARY_MAGIC, not_text, text_lines
from judgecp.data.ensemble.sources import read_hpdv2, read_mjbench

FloatArray = NDArray[np.float64]
Encoder = Callable[[Sequence[Any]], FloatArray]

SOURCES = ("hpdv2", "mjbench")
CLIP_MODEL = "ViT-B-16"
CLIP_PRETRAINED = "laion2b_s34b_b88k"


def read_embeddings(path: str | Path) -> dict[str, FloatArray]:
    """Item id -> embedding vector, from an ``.npz`` or ``.jsonl`` file (module docstring)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such embeddings file")
    table: dict[str, FloatArray] = {}
    if path.suffix == ".npz":
        items, vectors = _npz_arrays(path)
        if vectors.ndim != 2 or items.ndim != 1 or vectors.shape[0] != items.shape[0]:
            raise InputError(f"{path}: 'embedding' must be (items x dim) with one row per 'item'")
        for item, vector in zip(items.tolist(), vectors, strict=True):
            if str(item) in table:
                raise InputError(f"{path}: item {clip(str(item))!r} appears twice")
            table[str(item)] = vector
    elif path.suffix in (".jsonl", ".json"):
        for line_no, line in enumerate(text_lines(path, "a UTF-8 JSONL file of embeddings"), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                item, vector = str(row["item"]), np.asarray(row["embedding"], dtype=float)
            except (KeyError, TypeError, ValueError, RecursionError) as exc:
                raise InputError(
                    f"{path}:{line_no}: expected {{\"item\": ID, \"embedding\": [numbers]}} "
                    f"({type(exc).__name__}: {clip(str(exc))})"
                ) from None
            if item in table:
                raise InputError(f"{path}:{line_no}: item {clip(item)!r} appears twice")
            table[item] = vector
    else:
        raise InputError(f"{path}: embeddings must be a .npz or .jsonl file")
    dims = {v.shape for v in table.values()}
    if len(dims) > 1 or any(len(d) != 1 for d in dims):
        raise InputError(f"{path}: embeddings must all be vectors of one length, got shapes {sorted(dims)[:5]}")
    bad = next((item for item, v in table.items() if not np.isfinite(v).all()), None)
    if bad is not None:
        raise InputError(f"{path}: the embedding of item {clip(bad)!r} is not finite (NaN or infinite values)")
    return table


def _npz_arrays(path: Path) -> tuple[NDArray[Any], FloatArray]:
    """The ``item`` and ``embedding`` arrays of an ``.npz``: plain arrays only (a pickled object array could run
    code when loaded, so it is refused), each problem one line naming the file."""
    device = not_text(path)
    if device is not None and "device" in str(device):
        raise device
    with path.open("rb") as handle:
        head = handle.read(8)
    if not head.startswith(b"PK\x03\x04"):  # an .npz is a zip archive of .npy arrays
        what = next((name for magic, name in BINARY_MAGIC if head.startswith(magic)), None)
        if what is None and head[:1] == b"\x80":
            what = "a Python pickle"
        raise InputError(f"{path}: not a numpy .npz file" + (f" ({what})" if what else ""))
    try:
        with np.load(path, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise InputError(f"{path}: a single numpy array, not an .npz with arrays 'item' and 'embedding'")
            missing = [k for k in ("item", "embedding") if k not in data.files]
            if missing:
                raise InputError(f"{path}: needs arrays 'item' and 'embedding', lacks {missing[0]!r}")
            items, raw = data["item"], data["embedding"]
    except InputError:
        raise
    except ValueError as exc:
        if "pickle" in str(exc):
            raise InputError(f"{path}: holds pickled (object) arrays, which judgecp does not load (loading them "
                             "can run code): save 'item' as strings and 'embedding' as numbers") from None
        raise InputError(f"{path}: not a numpy .npz file ({clip(str(exc))})") from None
    except (OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise InputError(f"{path}: not a numpy .npz file ({type(exc).__name__}: {clip(str(exc))})") from None
    if raw.dtype.kind not in "biuf":
        raise InputError(f"{path}: 'embedding' must hold numbers, not {raw.dtype} values")
    return items, np.asarray(raw, dtype=float)


def write_embeddings(table: Mapping[str, Sequence[float] | FloatArray], path: str | Path) -> None:
    """Write item id -> vector as ``.npz`` or ``.jsonl`` (by the suffix)."""

    path = Path(path)
    items = list(table)
    if path.suffix == ".npz":
        with atomic_writer(path, "wb", encoding=None) as binary:
            np.savez(binary, item=np.array(items), embedding=np.array([table[i] for i in items], dtype=float))
    elif path.suffix == ".jsonl":
        with atomic_writer(path) as handle:
            for item in items:
                vector = [float(v) for v in table[item]]
                handle.write(json.dumps({"item": item, "embedding": vector}) + "\n")
    else:
        raise InputError(f"{path}: embeddings must be written as .npz or .jsonl")


def embed_pairs(pairs: Sequence[tuple[Any, Any]], encoder: Encoder, batch_size: int = 32) -> FloatArray:
    """Normalised mean of each pair's two image embeddings (pairs x dim).

    Parameters
    ----------
    pairs : sequence of (image, image)
        Whatever the encoder accepts (PIL images, paths, arrays).
    encoder : callable
        List of images -> (n x dim) array.
    batch_size : int
        Pairs per encoder call.
    """
    chunks = []
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        flat = [image for pair in batch for image in pair]
        vectors = np.asarray(encoder(flat), dtype=float)
        if vectors.ndim != 2 or vectors.shape[0] != len(flat):
            raise InputError(f"the encoder returned shape {vectors.shape} for {len(flat)} images")
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        mean = vectors.reshape(len(batch), 2, -1).mean(axis=1)
        chunks.append(mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12))
    if not chunks:
        return np.zeros((0, 0))
    out: FloatArray = np.concatenate(chunks)
    return out


def open_clip_encoder(
    model_name: str = CLIP_MODEL,
    pretrained: str = CLIP_PRETRAINED,
    *,
    cache_dir: str | None = None,
    device: str = "cpu",
) -> Encoder:
    """An encoder from open_clip (default: CLIP ViT-B-16, laion2b_s34b_b88k, as in Table 5).

    Images may be PIL images or paths. ``pretrained`` may also be a local
    checkpoint file. Raises :class:`~judgecp.base.errors.MissingDependencyError`
    without the ``clip`` extra and :class:`~judgecp.base.errors.InputError` when
    the weights cannot be loaded (no network and not cached).
    """
    open_clip: Any = require("open_clip", "clip", "computing CLIP image embeddings")
    torch: Any = require("torch", "clip", "computing CLIP image embeddings")
    try:
        model, _, preprocess = open_clip.create_model_and_transforms(
            model_name, pretrained=pretrained, cache_dir=cache_dir, device=device
        )
    except Exception as exc:  # open_clip raises RuntimeError/OSError/hub errors alike
        raise InputError(
            f"open_clip weights {model_name}/{pretrained} are not available here "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}); "
            "put them in the open_clip/Hugging Face cache (or pass a checkpoint file as "
            "pretrained), or give precomputed embeddings with --embeddings FILE"
        ) from exc
    model.eval()

    def encode(images: Sequence[Any]) -> FloatArray:
        from PIL import Image

        loaded = [Image.open(im).convert("RGB") if isinstance(im, (str, Path)) else im for im in images]
        batch = torch.stack([preprocess(im) for im in loaded]).to(device)
        with torch.no_grad():
            features = model.encode_image(batch)
        out: FloatArray = features.float().cpu().numpy().astype(float)
        return out

    return encode


def main(argv: Sequence[str] | None = None) -> int:
    """Embed a preference source's items with open_clip and write ``--out`` (.npz or .jsonl)."""

    parser = argparse.ArgumentParser(
        prog="python -m judgecp.data.ensemble.embeddings",
        description="CLIP embeddings of HPSv2 / MJ-Bench preference pairs, keyed by item id.",
    )
    parser.add_argument("--source", choices=SOURCES, required=True)
    parser.add_argument("--root", help="local directory (default: the hub dataset)")
    parser.add_argument("--split", help="split (hpdv2: test, train; mjbench: alignment, safety, quality, bias)")
    parser.add_argument("--limit", type=int, help="embed only the first N items")
    parser.add_argument("--out", required=True, help="embeddings file to write (.npz or .jsonl)")
    parser.add_argument("--model", default=CLIP_MODEL, help=f"open_clip model ({CLIP_MODEL})")
    parser.add_argument("--pretrained", default=CLIP_PRETRAINED, help=f"weights tag or file ({CLIP_PRETRAINED})")
    parser.add_argument("--cache-dir", help="open_clip / Hugging Face cache directory")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    try:
        if not args.out.endswith((".npz", ".jsonl")):
            raise InputError(f"--out {args.out}: embeddings must be written as .npz or .jsonl")
        if args.source == "hpdv2":
            items = read_hpdv2(args.root, split=args.split or "test", limit=args.limit)
        else:
            items = read_mjbench(args.root, split=args.split or "quality", limit=args.limit)
        if not items:
            raise InputError(f"{args.source}: no items to embed")
        encoder = open_clip_encoder(
            args.model, args.pretrained, cache_dir=args.cache_dir, device=args.device
        )
        vectors = embed_pairs([item.images for item in items], encoder)
    except (InputError, MissingDependencyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_embeddings({item.id: vectors[i] for i, item in enumerate(items)}, args.out)
    print(f"{len(items)} items -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
