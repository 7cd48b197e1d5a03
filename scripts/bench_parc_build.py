"""Time ``judgecp parc build`` on generated comparative items (vision variations, no rewriter).

    python scripts/bench_parc_build.py --items 200 --size 336 --jobs 2

Prints seconds per stage and items per second; timings live here, never in tests.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from judgecp.workflows.parc_build import build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--size", type=int, default=336, help="image side in pixels (LLaVA-1.5 input: 336)")
    parser.add_argument("--jobs", type=int, default=2, help="threads for the last run (default 2)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "img").mkdir()
        rows = []
        for i in range(args.items):
            for k in range(2):
                pixels = rng.integers(0, 256, (args.size, args.size, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(root / "img" / f"{i}_{k}.png")
            rows.append({"id": f"item-{i}", "dataset": "bench", "question": "Which object is more sliced?",
                         "options": {"A": "Left", "B": "Right"}, "correct": "AB"[i % 2],
                         "image": [f"img/{i}_0.png", f"img/{i}_1.png"]})
        (root / "originals.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{args.items} two-image items, {args.size}x{args.size} PNG")
        hashes = set()
        for variations, jobs in (("VS-S", 1), ("VR-B", 1), ("VR-L", 1), ("VR-R", 1), ("VR-B,VR-L,VR-R,VS-S", 1),
                                 ("VR-B,VR-L,VR-R,VS-S", args.jobs)):
            start = time.perf_counter()
            result = build(root / "originals.jsonl", root / "out", variations=variations, overwrite=True, jobs=jobs)
            seconds = time.perf_counter() - start
            print(f"  {variations:22s} jobs={jobs}  {seconds:7.2f} s  {args.items / seconds:8.1f} items/s  "
                  f"({sum(result.counts.values())} records)")
            if "," in variations:
                hashes.add(result.content_hash)
        print(f"  same content hash with jobs=1 and jobs={args.jobs}: {len(hashes) == 1}")


if __name__ == "__main__":
    main()
