"""``judgecp evaluate --kind ensemble``: prompt ensembles from one record per (item, prompt), the kind's own command.

The ensemble study (:mod:`judgecp.kinds.ensemble.evaluate`: uniform averaging, the
Bayesian prompt ensemble and the multimodal mixture, with ECE, MCE, AUPRC,
NLL and BY selection, as in Table 6 of the prompt-ensemble supplement) runs
under the ``evaluate`` command: :class:`EnsembleCommand` adds its own flags as
one argument group and runs it. The shared flags mean what they mean
for every kind (``--alpha``: the selection's FDR level; ``--seeds``: the
repetitions; ``--json``, ``--quiet``, ``--format``, ``--example``); a flag of
another kind is an error with ``--kind ensemble``, and an ensemble flag is an
error with any other kind (it would be ignored).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.flags import number, whole
from judgecp.base.outputs import check_outputs
from judgecp.kinds.ensemble.evaluate import build_parser, parse_seeds, read_input_records
from judgecp.kinds.ensemble.evaluate import run as run_ensemble
from judgecp.kinds.kind import Command

#: argparse dest -> flag, of the flags only ``--kind ensemble`` takes.
ENSEMBLE_FLAGS = {
    "embeddings": "--embeddings", "prompt_set": "--prompt-set", "item_field": "--item-field",
    "validation": "--validation", "clusters": "--clusters", "membership": "--membership",
    "concentration": "--concentration", "procedure": "--procedure", "predictions": "--predictions",
}
#: Flags of ``evaluate`` that ``--kind ensemble`` shares (dest names).
SHARED = {"input", "kind", "example", "format", "alpha", "seeds", "json", "quiet", "func", "command"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``ensemble (--kind ensemble)`` argument group of ``judgecp evaluate``."""
    g = parser.add_argument_group("prompt ensembles (--kind ensemble; docs/ensembles.md)")
    g.add_argument(
        "--embeddings",
        metavar="FILE",
        help="item embeddings, .npz or .jsonl keyed by meta.item (default: the records' meta.embedding)",
    )
    g.add_argument(
        "--prompt-set", dest="prompt_set", metavar="FILE", help="prompt-set JSON giving each prompt's answer_key"
    )
    g.add_argument(
        "--item-field",
        dest="item_field",
        metavar="PATH",
        help="dotted field tying an item's records together (default meta.item)",
    )
    g.add_argument(
        "--validation", type=whole(), help="labeled items the BPE and mixture weights are fitted on (default 50)"
    )
    g.add_argument("--clusters", type=whole(), help="clusters K of the mixture (default 4)")
    g.add_argument("--membership", choices=("hard", "soft"), help="p(z|x): k-means assignment (default) or soft")
    g.add_argument("--concentration", type=number(above=0), help="sharpness of soft membership (default 20)")
    g.add_argument(
        "--procedure", choices=("by", "bh"), help="selective prediction: Benjamini-Yekutieli (default) or -Hochberg"
    )
    g.add_argument(
        "--predictions", metavar="FILE", help="write the unlabeled items' mixture answers and selection (JSONL)"
    )


def given_flags(args: argparse.Namespace) -> list[str]:
    """The ensemble flags given (with another kind they are an error: they would be ignored)."""
    return [flag for dest, flag in ENSEMBLE_FLAGS.items() if getattr(args, dest, None) is not None]


def run(args: argparse.Namespace) -> int:
    """``judgecp evaluate --kind ensemble ...``; returns the exit status."""
    defaults = build_parser().parse_args([])
    other = sorted(
        "--" + dest.replace("_", "-") for dest, value in vars(args).items()
        if dest not in SHARED and dest not in ENSEMBLE_FLAGS and value not in (None, False, [])
    )
    if other:
        raise InputError(f"{', '.join(other)}: not options of --kind ensemble")
    if args.example == bool(args.input):
        raise InputError("give an INPUT file or --example (not both)")
    inputs = [p for p in (args.input, args.embeddings, args.prompt_set) if isinstance(p, str) and p]
    check_outputs({"--json": None if args.json == "-" else args.json, "--predictions": args.predictions}, inputs=inputs)
    values: dict[str, Any] = {dest: getattr(args, dest) for dest in ENSEMBLE_FLAGS if getattr(args, dest) is not None}
    alpha = defaults.alpha if args.alpha is None else float(args.alpha)  # --alpha is a level (checked when parsed)
    parse_seeds(args.seeds or defaults.seeds)  # before any work: 0 repetitions would be a table of NaN
    fmt = "auto" if args.format in (None, "table") else args.format
    merged = {**vars(defaults), **values, "records": args.input, "example": args.example, "format": fmt,
              "alpha": alpha, "seeds": args.seeds or defaults.seeds, "json": args.json, "quiet": args.quiet}
    return run_ensemble(argparse.Namespace(**merged))


def looks_like_ensemble(path: str, fmt: str | None) -> bool:
    """Whether a file holds prompt-ensemble records (``meta.item`` with several prompts); never raises."""
    try:
        source, _ = read_input_records(path, "auto" if fmt in (None, "table") else fmt)
        if isinstance(source, list):
            records = source[:2000]
        else:
            records = []
            with open(source, encoding="utf-8") as handle:
                for line in handle:
                    if len(records) >= 2000:
                        break
                    records.append(json.loads(line))
        prompts = {r.get("prompt") for r in records if isinstance(r, dict) and (r.get("meta") or {}).get("item")}
        return len(prompts - {None}) > 1
    except Exception:  # only a hint: any failure means no
        return False


def with_hint(exc: InputError, args: argparse.Namespace) -> InputError:
    """``exc``, told to use ``--kind ensemble`` when no kind was given and the input is prompt-ensemble records."""
    if args.kind is None and args.input and looks_like_ensemble(args.input, args.format):
        return InputError(f"{exc}; these records answer several prompts per item (meta.item): "
                          "a prompt ensemble, read with --kind ensemble")
    return exc


class EnsembleCommand(Command):
    """``judgecp evaluate --kind ensemble``: its flags (:data:`ENSEMBLE_FLAGS`) and its run."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def given(self, args: argparse.Namespace) -> list[str]:
        return given_flags(args)

    def run(self, args: argparse.Namespace) -> int:
        return run(args)

    def hint(self, exc: InputError, args: argparse.Namespace) -> InputError:
        return with_hint(exc, args)
