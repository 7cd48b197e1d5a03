"""``judgecp vlmeval ...``: run VLMEvalKit with judgecp, build the judge TSVs, list what is registered.

    judgecp vlmeval [run.py arguments]         register, then run VLMEvalKit's run.py
    judgecp vlmeval build-tsv KEY --source DIR --out DIR [--lite] [--limit N] [--name NAME]
    judgecp vlmeval list                       judgecp's datasets and models in VLMEvalKit
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from judgecp.adapters.vlmeval.builders import (
    build_mllm_judge,
    build_mllm_judge_pair,
    build_parc,
    build_polaris,
)
from judgecp.base.errors import InputError
from judgecp.base.flags import whole
from judgecp.base.outputs import Folder, check_outputs
from judgecp.cli import Parser

USAGE = """\
usage: judgecp vlmeval [run.py arguments ...]
       judgecp vlmeval build-tsv {mllm_judge,polaris,mllm_judge_pair,parc} --source DIR [--out DIR]
                                 [--lite] [--limit N] [--name NAME]
       judgecp vlmeval list

Runs VLMEvalKit's run.py with the same arguments after registering judgecp's
datasets (MLLMJudge_CP, MLLMJudge_CP_Lite, Polaris_CP: Likert judging;
MLLMJudgePair_CP, MLLMJudgePair_CP_Lite: pairwise judging in both orders;
PARC_<name>: PARC variation datasets built into $LMUData) and a `<name>-lp`
model for every supported_VLM entry, e.g.

  judgecp vlmeval --data MLLMJudge_CP MLLMJudgePair_CP --model Qwen2.5-VL-7B-Instruct-lp

An -lp model on VLMEvalKit's own multiple-choice benchmarks (AI2D_TEST,
MMMU_DEV_VAL, ...) also writes option-letter logprobs to a sidecar, for
`judgecp evaluate --format vlmeval outputs/<model>/<model>_<dataset>.xlsx`.

run.py is found from $JUDGECP_VLMEVAL_RUN (run.py or the checkout), else beside
the installed vlmeval package. Extra model entries: $JUDGECP_VLMEVAL_MODELS
(a JSON file). See docs/vlmeval.md.
"""


def _build(argv: Sequence[str]) -> int:

    p = Parser(prog="judgecp vlmeval build-tsv",
                                description="Build a judge dataset's VLMEvalKit TSV from the public release (offline).")
    p.add_argument("key", choices=("mllm_judge", "polaris", "mllm_judge_pair", "parc"))
    p.add_argument("--source", required=True,
                   help="local copy of the public release, or a PARC variation folder (see docs/vlmeval.md)")
    p.add_argument("--out", default=os.environ.get("LMUData"), help="output folder (default: $LMUData)")
    p.add_argument("--name", help="dataset name (default: MLLMJudge_CP[_Lite] / Polaris_CP / MLLMJudgePair_CP[_Lite] "
                                  "/ PARC_<dataset>; PARC names start with PARC_)")
    p.add_argument("--lite", action="store_true", help="MLLM-as-a-Judge: the Benchmark_Lite split")
    p.add_argument("--limit", type=whole(), help="keep the first N usable rows (pairs for mllm_judge_pair)")
    p.add_argument("--image-dir", help="image folder, when not under --source")
    args = p.parse_args(argv)
    if not args.out:
        raise InputError("give --out DIR or set $LMUData (VLMEvalKit's data folder)")
    check_outputs({"--out": Folder(args.out)})
    if args.lite and args.key not in ("mllm_judge", "mllm_judge_pair"):
        raise InputError("--lite is for mllm_judge and mllm_judge_pair")
    if args.image_dir and args.key == "parc":
        raise InputError("--image-dir: a PARC folder's image paths are relative to the folder")
    if args.key == "mllm_judge":
        result = build_mllm_judge(args.source, args.out, lite=args.lite, name=args.name, image_dir=args.image_dir,
                                  limit=args.limit)
    elif args.key == "mllm_judge_pair":
        result = build_mllm_judge_pair(args.source, args.out, lite=args.lite, name=args.name,
                                       image_dir=args.image_dir, limit=args.limit)
    elif args.key == "parc":
        result = build_parc(args.source, args.out, name=args.name, limit=args.limit)
    else:
        result = build_polaris(args.source, args.out, name=args.name or "Polaris_CP", image_dir=args.image_dir,
                               limit=args.limit)
    print(result.summary())
    print(f"manifest: {result.manifest}")
    return 0


def _list() -> int:
    from judgecp.adapters.vlmeval.launcher import (  # lazy: imports VLMEvalKit
        prepare,
        vlmeval_logging,
    )

    with vlmeval_logging():
        info = prepare()
    from vlmeval.config import supported_VLM

    print("datasets:", ", ".join(info.datasets))
    print("dataset classes (for --config):", ", ".join(info.dataset_classes))
    print(f"-lp models: {sum(1 for k in supported_VLM if k.endswith('-lp'))} (one per supported_VLM entry)")
    if info.extra_models:
        print("extra models ($JUDGECP_VLMEVAL_MODELS):", ", ".join(info.extra_models))
    print("model classes (for --config): JudgeCPLogprobs (vlmeval.vlm), JudgeCPOpenAI (vlmeval.api)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help") and len(args) == 1:
        print(USAGE)
        return 0
    if args and args[0] == "build-tsv":
        return _build(args[1:])
    if args and args[0] == "list":
        return _list()
    from judgecp.adapters.vlmeval.launcher import launch  # lazy: imports VLMEvalKit

    return launch(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
