"""``judgecp report``: Markdown, HTML and figures from one or more ``judgecp evaluate --json`` reports."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from judgecp.base.flags import levels
from judgecp.base.outputs import Folder, check_outputs
from judgecp.kinds.protocol import parse_settings
from judgecp.workflows.reports import write_report

#: What ``report -o DIR`` replaces in DIR (anything else there stays).
REPORT_ENTRIES = ("report.md", "report.html", "figures")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="report.md, a self-contained report.html and PNG/SVG figures from evaluate --json reports",
        description="Draw the figures of one or more `judgecp evaluate --json` reports (several: side by side), "
        "and of the nightly loop (across nights: a history or the apply summaries of its nights). "
        "Needs matplotlib: pip install judgecp[report].",
    )
    p.add_argument("reports", nargs="+", metavar="REPORT.json|DIR",
                   help="reports of judgecp evaluate --json (any kind); an lm-eval samples file or a VLMEvalKit "
                   "prediction file (evaluated first); the nightly loop's results: compare and plan --json, an "
                   "apply --history file or the apply summaries of its nights (one figure across nights); or an "
                   "output folder (every such file in it)")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="output folder (created; built aside and moved into place at the end)")
    p.add_argument("--names", help="comma-separated display names, one per report (default: the file names)")
    p.add_argument("--method", help="method (pairwise: controller) of the one-line-per-report figures "
                   "(default: the first one every report has)")
    p.add_argument(
        "--alphas",
        default="0.05,0.1,0.2",
        type=levels,
        help="levels at which harness output files are evaluated (default 0.05,0.1,0.2); reports are drawn as they are",
    )
    p.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:

    check_outputs({"-o": Folder(args.output, REPORT_ENTRIES)}, inputs=args.reports)
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    alphas = parse_settings({"alphas": args.alphas}, kind="likert", spell=lambda name: "--" + name).alphas
    written = write_report(args.reports, args.output, names=names, focus=args.method, alphas=alphas)
    print(f"wrote {written.markdown}, {written.html} and {len(written.figures)} figure files", file=sys.stdout)
    for m in written.missing:
        print(f"  not drawn: {m.title} ({m.reason})", file=sys.stdout)
    return 0
