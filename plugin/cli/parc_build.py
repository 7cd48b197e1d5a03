"""``judgecp parc build SOURCE -o DIR --variations ...``: PARC's prompt variations (docs/parc_build.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.flags import number, whole
from judgecp.base.outputs import Folder, check_outputs
from judgecp.workflows.parc_build import (
    ExchangeMap,
    HFRewriter,
    OpenAIRewriter,
    TransformSettings,
    build,
)
from judgecp.workflows.parc_build.builder import parse_variations
from judgecp.workflows.parc_build.output import OUTPUTS


def add_parser(sub: Any) -> None:
    p = sub.add_parser("parc", help="PARC prompt variations: build a variation directory from multiple-choice VQA data")
    psub = p.add_subparsers(dest="parc_command", required=True, metavar="SUBCOMMAND")
    b = psub.add_parser(
        "build",
        help="write DIR/variations.jsonl, images, review.jsonl and manifest.json from SOURCE",
        description="Build PARC's prompt variations (docs/parc_build.md). Vision variations need no rewriter; "
        "language variations need --rewriter-url/--rewriter-model or --rewriter-hf.",
    )
    b.add_argument("source", help="originals JSONL (variation format), a CSV/TSV/JSONL/Parquet table, a directory, "
                   "or a hub dataset id (owner/name, or 'mmbench')")
    b.add_argument("-o", "--out", required=True, metavar="DIR", help="output directory")
    b.add_argument("--variations", default="vision",
                   help="comma-separated PARC names (LR-I,LR-C,LR-V,LS-N,LS-A,LS-M,VR-B,VR-L,VR-R,VS-S,VS-E), "
                   "or all / vision / language (default: vision, without VS-E unless --exchange-map is given)")
    b.add_argument(
        "--dataset", help="dataset name in the records (default: the rows' dataset field, else the source's name)"
    )
    b.add_argument("--split", help="hub or hub-copy split (mmbench: dev)")
    b.add_argument("--config", help="hub dataset config")
    b.add_argument("--image-root", help="directory image paths are relative to (default: the source's)")
    b.add_argument("--limit", type=whole(), help="use the first N rows of the source")
    cols = b.add_argument_group("columns (tables; default: the usual names)")
    for name in ("id", "question", "options", "answer", "image"):
        cols.add_argument(f"--{name}-column", dest=f"col_{name}",
                          help="two image columns as 'image_1,image_2'" if name == "image" else None)
    rw = b.add_argument_group("rewriter (language variations)")
    rw.add_argument("--rewriter-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    rw.add_argument("--rewriter-model", help="model name at --rewriter-url (PARC used LLaMA3-70B)")
    rw.add_argument("--rewriter-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    rw.add_argument("--rewriter-hf", metavar="MODEL", help="a local Hugging Face causal LM (hub id or directory)")
    rw.add_argument("--rewriter-device", default="cpu")
    rw.add_argument("--max-tokens", type=whole(), default=128)
    rw.add_argument("--clean-questions", action="store_true",
                    help="first rephrase each original question into one grammatical question (A7.4's prompt)")
    rw.add_argument("--ls-m-scope", choices=("more_less", "comparative"), default="more_less",
                    help="LS-M for questions with more/less/fewer (default), or also every two-image Left/Right item")
    rw.add_argument("--ls-n-fallback", action="store_true",
                    help="LS-N by rule where there is no rewriter or its output fails a check (flagged per record)")
    vs = b.add_argument_group("vision")
    vs.add_argument(
        "--exchange-map", help="VS-E: JSON/JSONL of {question, image, beats: [...]} or {question, image, score}"
    )
    vs.add_argument(
        "--exchange-min-gap",
        type=number(at_least=0),
        default=0.0,
        help="scores: a beats b when score(a) - score(b) > GAP",
    )
    vs.add_argument("--exchange-replace", choices=("winner", "loser", "either"), default="winner",
                    help="which image VS-E replaces (supplement A7.3: the winner; or the roles swapped)")
    vs.add_argument(
        "--blur-fraction",
        type=number(above=0, below=1),
        help="VR-B radius as a fraction of the shorter side (default 0.02)",
    )
    vs.add_argument("--brightness", type=number(above=1), help="VR-L brightness factor (default 1.6)")
    vs.add_argument("--rotation", type=int, choices=(90, 180, 270), help="VR-R degrees counter-clockwise (default 90)")
    b.add_argument("--jobs", type=whole(), default=1, help="threads for the image transforms (default 1)")
    b.add_argument("--overwrite", action="store_true", help="replace an earlier build in DIR")
    b.add_argument("--json", action="store_true", help="print the manifest's counts and exclusions as JSON")
    b.set_defaults(func=run_build)


def _rewriter(args: argparse.Namespace) -> Any:

    if args.rewriter_url and args.rewriter_hf:
        raise InputError("--rewriter-url and --rewriter-hf: choose one rewriter")
    if args.rewriter_url:
        if not args.rewriter_model:
            raise InputError("--rewriter-url needs --rewriter-model")
        return OpenAIRewriter(args.rewriter_url, args.rewriter_model, api_key_env=args.rewriter_key_env,
                              max_tokens=args.max_tokens)
    if args.rewriter_hf:
        return HFRewriter(args.rewriter_hf, device=args.rewriter_device, max_new_tokens=args.max_tokens)
    return None


def run_build(args: argparse.Namespace) -> int:
    from dataclasses import replace

    check_outputs({"-o": Folder(args.out, OUTPUTS)}, inputs=[args.source, args.exchange_map])
    spec = args.variations
    if spec.strip().lower() == "vision" and not args.exchange_map:
        spec = "VR-B,VR-L,VR-R,VS-S"
    variations = parse_variations(spec)
    settings = TransformSettings()
    for flag, name in (
        ("blur_fraction", "blur_fraction"),
        ("brightness", "brightness_factor"),
        ("rotation", "rotation_degrees"),
    ):
        value = getattr(args, flag)
        if value is not None:
            settings = replace(settings, **{name: value})
    exchange = ExchangeMap.read(args.exchange_map, min_gap=args.exchange_min_gap) if args.exchange_map else None
    columns = {name: getattr(args, f"col_{name}") for name in ("id", "question", "options", "answer", "image")}
    result = build(
        args.source, args.out, variations=variations, rewriter=_rewriter(args), exchange_map=exchange,
        exchange_replace=args.exchange_replace, ls_n_fallback=args.ls_n_fallback,
        clean_questions=args.clean_questions, ls_m_scope=args.ls_m_scope, transforms=settings,
        dataset=args.dataset, split=args.split, config=args.config, image_root=args.image_root,
        columns={k: v for k, v in columns.items() if v}, limit=args.limit, overwrite=args.overwrite, jobs=args.jobs,
    )
    manifest = result.manifest
    if args.json:
        print(
            json.dumps({k: manifest[k] for k in ("counts", "excluded", "source", "review", "content_hash")}, indent=2)
        )
        return 0
    src = manifest["source"]
    limited = f"; --limit {src['limit']} of {src['rows_in_source']} rows" if "limit" in src else ""
    print(f"{result.out_dir}: {src['items_kept']} of {src['items_read']} source items "
          f"({', '.join(manifest['datasets'])}{limited}), content hash {result.content_hash[:16]}")
    for e in src["excluded"]:
        print(f"  source excluded: {e['reason']} {e['count']}")
    for variation, count in manifest["counts"].items():
        left = manifest["excluded"].get(variation, [])
        detail = ", ".join(f"{e['reason']} {e['count']}" for e in left)
        print(f"  {variation:5s} {count:6d} written" + (f"   left out: {detail}" if detail else ""))
    if result.review:
        print(
            f"  {len(result.review)} entries to review (failed checks, rule-based LS-N): "
            f"{result.out_dir / 'review.jsonl'}",
            file=sys.stderr,
        )
    return 0
