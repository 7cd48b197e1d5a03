"""``judgecp evaluate --kind ensemble``: uniform vs BPE vs multimodal mixture on records.

Protocol, repeated for each seed (default 10):

1. draw ``--validation`` labeled items (default 50): the validation set the
   BPE and the mixture are fitted on (eq. (11));
2. the other labeled items are held out: ECE, MCE, AUPRC, NLL, accuracy and
   AURC of each method are computed on them;
3. the held-out items are split in two halves: BY selection at ``--alpha``
   calibrates on the first and selects among the second; the realised
   false-discovery proportion and the selected share are reported.

The clusters (``--clusters`` K, spherical k-means on every item's embedding,
labeled or not, the seed as cluster seed) are refitted per seed. The JSON
report holds ``methods.<uniform|bpe|mixture>.{ece, mce, auprc, nll, accuracy,
aurc}`` (means over seeds, with ``<metric>_std``), ``selection.<method>``,
the error-coverage curves, the mixture's weights from the first seed, the
counted exclusions and the settings. ``--predictions FILE`` writes, for every
unlabeled item, the mixture's answer distribution (fitted on the first seed's
validation set) and whether BY selects it (calibrated on all other labeled
items).

``--example`` runs the same on a seeded simulated judge (20 prompts, 4
clusters of images, each prompt reliable on one cluster;
:func:`judgecp.synthetic.judges.simulate_prompt_judge`), passed through the record reader.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.digest import with_digest
from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.base.outputs import atomic_write_text, atomic_writer
from judgecp.data.ensemble.embeddings import read_embeddings
from judgecp.data.ensemble.prompts import read_prompt_set
from judgecp.data.ensemble.records import EnsembleData, read_ensemble_records
from judgecp.data.formats import record_format, sniff_format
from judgecp.data.tables import check_readable
from judgecp.stats.ensemble.clustering import Membership
from judgecp.stats.ensemble.estimator import PromptEnsemble, uniform_proba
from judgecp.stats.ensemble.metrics import calibration_summary, error_coverage_curve, top_label
from judgecp.stats.ensemble.selection import Procedure, select_by_fdr
from judgecp.synthetic.judges import simulate_prompt_judge, simulated_records

FloatArray = NDArray[np.float64]
METHODS = ("uniform", "bpe", "mixture")
METRICS = ("ece", "mce", "auprc", "nll", "accuracy", "aurc")
COVERAGE_GRID = tuple(round(0.1 * k, 1) for k in range(1, 11))


def _fit(
    method: str, data: EnsembleData, fit_idx: NDArray[np.intp], clusters: int,
    membership: Membership, concentration: float, seed: int,
) -> PromptEnsemble | None:
    if method == "uniform":
        return None
    est = PromptEnsemble(
        1 if method == "bpe" else clusters, membership=membership,
        concentration=concentration, random_state=seed,
    )
    emb = None if data.embeddings is None else data.embeddings[fit_idx]
    return est.fit(data.log_probs[fit_idx], data.labels[fit_idx], emb, clustering_embeddings=data.embeddings)


def _predict(est: PromptEnsemble | None, data: EnsembleData, idx: NDArray[np.intp]) -> FloatArray:
    if est is None:
        return uniform_proba(data.log_probs[idx])
    emb = None if data.embeddings is None else data.embeddings[idx]
    return est.predict_proba(data.log_probs[idx], emb)


def evaluate_ensembles(
    data: EnsembleData,
    *,
    validation: int = 50,
    clusters: int = 4,
    membership: Membership = "hard",
    concentration: float = 20.0,
    seeds: Sequence[int] = tuple(range(10)),
    alpha: float = 0.1,
    procedure: Procedure = "by",
) -> dict[str, Any]:
    """The report of the module docstring (without predictions)."""
    labeled = np.flatnonzero(data.labeled)
    if clusters > 1 and data.embeddings is None:
        raise InputError("the mixture needs item embeddings: pass --embeddings FILE (or meta.embedding)")
    if validation < 1 or labeled.size < validation + 2:
        raise InputError(
            f"{labeled.size} labeled items: need --validation ({validation}) plus at least 2 held out"
        )
    per_seed: dict[str, list[dict[str, float]]] = {m: [] for m in METHODS}
    selection: dict[str, list[dict[str, float]]] = {m: [] for m in METHODS}
    curves: dict[str, list[list[float]]] = {m: [] for m in METHODS}
    first_weights: dict[str, Any] = {}
    for seed in seeds:
        order = np.random.default_rng(seed).permutation(labeled)
        fit_idx, held = order[:validation], order[validation:]
        cal, test = held[: held.size // 2], held[held.size // 2 :]
        for method in METHODS:
            est = _fit(method, data, fit_idx, clusters, membership, concentration, seed)
            proba = _predict(est, data, held)
            per_seed[method].append(calibration_summary(proba, data.labels[held]))
            curve = error_coverage_curve(proba, data.labels[held])
            curves[method].append([curve.error_at(c) for c in COVERAGE_GRID])
            conf_cal, right_cal = top_label(_predict(est, data, cal), data.labels[cal])
            conf_test, right_test = top_label(_predict(est, data, test), data.labels[test])
            chosen = select_by_fdr(conf_cal, right_cal, conf_test, alpha, procedure)
            selection[method].append(
                {"fdp": chosen.false_discovery_proportion(right_test),
                 "selected_share": chosen.n_selected / max(test.size, 1)}
            )
            if method == "mixture" and not first_weights and est is not None:
                first_weights = _weights_report(est, data)
    return {
        "methods": {m: _mean_std(per_seed[m], METRICS) for m in METHODS},
        "selection": {
            m: {"alpha": alpha, "procedure": procedure, **_mean_std(selection[m], ("fdp", "selected_share"))}
            for m in METHODS
        },
        "error_coverage": {
            "coverage": list(COVERAGE_GRID),
            **{m: np.mean(curves[m], axis=0).round(6).tolist() for m in METHODS},
        },
        "mixture_weights": first_weights,
        "settings": {
            "validation": validation, "clusters": clusters, "membership": membership,
            "concentration": concentration, "seeds": list(seeds), "alpha": alpha,
            "procedure": procedure, "ece_bins": 15,
        },
    }


def _mean_std(rows: list[dict[str, float]], keys: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in keys:
        values = np.array([r[key] for r in rows], dtype=float)
        finite = values[np.isfinite(values)]
        out[key] = float(finite.mean()) if finite.size else float("nan")
        out[f"{key}_std"] = float(finite.std()) if finite.size else float("nan")
    return out


def _weights_report(est: PromptEnsemble, data: EnsembleData) -> dict[str, Any]:
    clusters = []
    for z, row in enumerate(est.weights_):
        top = np.argsort(-row, kind="stable")[:3]
        clusters.append({
            "cluster": z, "validation_mass": float(est.validation_mass_[z]),
            "top_prompts": [{"prompt": data.prompts[a], "weight": round(float(row[a]), 6)} for a in top],
        })
    return {"prompts": data.prompts, "weights": est.weights_.round(6).tolist(), "clusters": clusters}


def predictions(
    data: EnsembleData, report: dict[str, Any], alpha: float, procedure: Procedure
) -> list[dict[str, Any]]:
    """Mixture answers for the unlabeled items, with BY selection (module docstring)."""
    s = report["settings"]
    labeled = np.flatnonzero(data.labeled)
    unlabeled = np.flatnonzero(~data.labeled)
    order = np.random.default_rng(s["seeds"][0]).permutation(labeled)
    fit_idx, cal = order[: s["validation"]], order[s["validation"] :]
    est = _fit("mixture", data, fit_idx, s["clusters"], s["membership"], s["concentration"], s["seeds"][0])
    if unlabeled.size == 0:
        return []
    proba = _predict(est, data, unlabeled)
    conf_cal, right_cal = top_label(_predict(est, data, cal), data.labels[cal])
    confidence = proba.max(axis=1)
    chosen = select_by_fdr(conf_cal, right_cal, confidence, alpha, procedure)
    return [
        {
            "item": data.items[j],
            "proba": {c: round(float(p), 6) for c, p in zip(data.classes, proba[i], strict=True)},
            "prediction": data.classes[int(np.argmax(proba[i]))],
            "confidence": round(float(confidence[i]), 6),
            "selected": bool(chosen.selected[i]),
            "pvalue": round(float(chosen.pvalues[i]), 6),
        }
        for i, j in enumerate(unlabeled)
    ]


def parse_seeds(text: str) -> list[int]:
    """``--seeds``: a count of repetitions (at least 1) or a list of distinct seeds."""
    try:
        seeds = list(range(int(text))) if "," not in text else [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise InputError(f"--seeds must be a count or a comma-separated list, got {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise InputError(f"--seeds must be a count of at least 1 or a list of distinct seeds, got {text!r}")
    if min(seeds) < 0:
        raise InputError(f"--seeds: every seed must be a whole number >= 0, got {min(seeds)}")
    return seeds


def add_input_arguments(parser: argparse.ArgumentParser, *, example: str) -> None:
    """The input flags of this module and :mod:`judgecp.kinds.ensemble.sweep`: RECORDS (or ``--example``,
    helped by ``example``), ``--format``, ``--embeddings``, ``--prompt-set``, ``--item-field``
    (what :func:`load_input` reads)."""
    parser.add_argument("records", nargs="?", help="judgecp.record/1 JSONL, one record per (item, prompt), "
                        "or a harness output file (an lm-eval samples file of image_pref_ensemble_cp)")
    parser.add_argument("--format", default="auto",
                        help="auto (default: recognise it), records, or a registered harness format (lm-eval)")
    parser.add_argument("--example", action="store_true", help=example)
    parser.add_argument("--embeddings", help="item embeddings (.npz or .jsonl keyed by meta.item)")
    parser.add_argument("--prompt-set", help="prompt-set JSON giving each prompt's answer_key")
    parser.add_argument("--item-field", default="meta.item", help="dotted field tying an item's records (meta.item)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m judgecp.kinds.ensemble.evaluate",
        description="Calibrate a judge by ensembling its prompts: uniform, BPE, multimodal mixture.",
    )
    add_input_arguments(parser, example="run on a seeded simulated judge")
    parser.add_argument("--validation", type=int, default=50, help="labeled items the weights are fitted on (50)")
    parser.add_argument("--clusters", type=int, default=4, help="K for the mixture (4)")
    parser.add_argument("--membership", choices=("hard", "soft"), default="hard", help="p(z|x) (hard)")
    parser.add_argument("--concentration", type=float, default=20.0, help="soft membership sharpness (20)")
    parser.add_argument("--seeds", default="10", help="repetitions: a count or a list (10)")
    parser.add_argument("--alpha", type=float, default=0.1, help="FDR level of the selection (0.1)")
    parser.add_argument("--procedure", choices=("by", "bh"), default="by", help="selection procedure (by)")
    parser.add_argument("--json", help="write the JSON report here ('-': stdout)")
    parser.add_argument("--predictions", help="write the unlabeled items' mixture answers here (JSONL)")
    return parser


def read_input_records(path: str | Path, fmt: str | None = "auto") -> tuple[list[dict[str, Any]] | Path, Exclusions]:
    """The records of ``path``: a ``judgecp.record/1`` JSONL file as it is, or a harness output file
    read through its registered record format (``lm-eval``: a samples file of a judgecp task).

    ``fmt``: ``auto`` (recognise it), ``table``/``records`` (records JSONL) or a registered format name.
    Returns the records (or the path, for a records file) and what the format reader left out.
    """

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such records file")
    check_readable(path)  # a folder, a device: one line each
    name = sniff_format(path) if fmt in (None, "auto") else fmt
    if name in ("table", "records"):
        return path, Exclusions()
    batch = record_format(name).read(path)
    return list(batch.records), batch.excluded


def load_input(args: argparse.Namespace) -> EnsembleData:
    if args.example:
        given = [
            flag for flag, value in (("--embeddings", args.embeddings), ("--prompt-set", args.prompt_set)) if value
        ]
        if given:  # the example has its own: a file given with it would be ignored
            raise InputError(
                f"{' and '.join(given)} {'go' if len(given) > 1 else 'goes'} with a RECORDS file, not --example (it "
                "has its own)"
            )
        sim = simulate_prompt_judge(2000, 20, 4, random_state=0)
        records, vectors = simulated_records(sim, labeled_fraction=0.8, random_state=0)
        return read_ensemble_records(records, embeddings=vectors)
    if not args.records:
        raise InputError("give a RECORDS file or --example")
    table = read_embeddings(args.embeddings) if args.embeddings else None
    prompt_set = read_prompt_set(args.prompt_set) if args.prompt_set else None
    source, read_excluded = read_input_records(args.records, getattr(args, "format", "auto"))
    data = read_ensemble_records(
        source, embeddings=table, prompt_set=prompt_set, item_field=args.item_field,
        require_embeddings=args.embeddings is not None,
    )
    data.exclusions.merge(read_excluded)
    return data


def ensemble_report(data: EnsembleData, **options: Any) -> dict[str, Any]:
    """The JSON report of ``judgecp evaluate --kind ensemble``: the input's counts, then
    :func:`evaluate_ensembles`' sections (module docstring); ``options`` are its keyword arguments."""
    report = evaluate_ensembles(data, **options)
    return {
        "kind": "ensemble", "judge": data.judge, "shape": data.shape, "classes": data.classes,
        "n_items": len(data.items), "n_labeled": int(data.labeled.sum()),
        "n_prompts": len(data.prompts), "floored_answers": data.floored,
        "excluded": data.exclusions.to_json(), **report,
    }


def format_summary(report: dict[str, Any]) -> str:
    lines = [f"{'method':<9} {'ECE':>7} {'MCE':>7} {'AUPRC':>7} {'NLL':>7} {'acc':>7}   BY FDP  selected"]
    for m in METHODS:
        r, s = report["methods"][m], report["selection"][m]
        lines.append(
            f"{m:<9} {r['ece']:7.3f} {r['mce']:7.3f} {r['auprc']:7.3f} {r['nll']:7.3f} "
            f"{r['accuracy']:7.3f}   {s['fdp']:6.3f}  {s['selected_share']:8.3f}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run on parsed arguments (this module's parser, or ``judgecp evaluate --kind ensemble``'s)."""
    data = load_input(args)
    report = ensemble_report(
        data, validation=args.validation, clusters=args.clusters, membership=args.membership,
        concentration=args.concentration, seeds=parse_seeds(args.seeds), alpha=args.alpha,
        procedure=args.procedure,
    )
    if args.predictions:

        rows = predictions(data, report, args.alpha, args.procedure)
        with atomic_writer(args.predictions) as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
    if not getattr(args, "quiet", False):
        print(format_summary(report))
        if data.exclusions:
            print(f"excluded: {data.exclusions.total} ({', '.join(data.exclusions.counts)})")
    if args.json:
        text = json.dumps(with_digest(report), indent=1)  # strict JSON with its digest, as every result file
        if args.json == "-":
            print(text)
        else:

            atomic_write_text(args.json, text + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m judgecp.kinds.ensemble.evaluate``, the same as ``judgecp evaluate --kind ensemble``; the exit
    status."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
