"""PARC: accuracy, certainty, consistency and reliability per variation, raw and calibrated.

The formulas and their guarantees are in :mod:`judgecp.stats.parc`. The LAC
threshold behind certainty is split-conformal: the source items of each
(model, dataset) are split (``splits`` times, ``cal_fraction``); the
calibration half of the *same variation* sets it (``reference="variation"``,
default) or that of the *original prompt* (``reference="original"``). Every
score is measured on the test half and averaged over splits. Records name
the model in ``judge`` and the data set in ``task``; the report keeps PARC's
words (``model``, ``dataset``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.data.choice import PAD_LOGPROB, ChoiceData
from judgecp.kinds.choice.study import option_scale, option_sets
from judgecp.kinds.kind import Study, counts
from judgecp.kinds.metrics import (
    PARC_SCORES,
    Entry,
    Metric,
    PrimaryMetric,
    count_metrics,
    metric_suffix,
    pick,
)
from judgecp.kinds.protocol import Protocol, split_indices
from judgecp.stats.methods.sets import LAC
from judgecp.stats.parc import (
    SEMANTIC_FAMILIES,
    calibrated,
    family_of,
    reliability,
    reliability_exponent,
)


@dataclass
class RowScores:
    """Per-row ingredients of PARC's scores (one row per record)."""

    model: NDArray[Any]
    dataset: NDArray[Any]
    source: NDArray[Any]
    variation: NDArray[Any]
    usable: NDArray[np.bool_]
    correct: NDArray[np.bool_]  # the model's answer is a correct option
    acc_rand: NDArray[np.float64]  # #correct / #options
    consistency: NDArray[np.float64]  # NaN for the original prompt and where it is missing
    cons_rand: NDArray[np.float64]
    excluded: Exclusions


def row_scores(data: ChoiceData) -> RowScores:
    """Accuracy, random accuracy and consistency of every record; unusable ones counted."""
    for f in ("source_id", "variation"):
        if f not in data.fields:
            raise InputError(f"PARC records need a {f!r} field")
    n = data.n
    variation, source = data.fields["variation"], data.fields["source_id"]
    dataset = data.fields.get("task", np.full(n, "data"))
    model = data.fields.get("judge", np.full(n, "model"))
    excluded = Exclusions()
    fam = np.empty(n, dtype=object)
    usable = np.ones(n, bool)
    for i, v in enumerate(variation):
        try:
            fam[i] = family_of(str(v))
        except InputError:
            excluded.add("variation_unknown", data.ids[i])
            usable[i] = False
    # answers on the original prompts, for consistency
    original: dict[tuple[str, str, str], str] = {}
    for i in np.flatnonzero(usable & (variation == "O")).tolist():
        original[(model[i], dataset[i], source[i])] = data.options[i][data.prediction[i]]
    has_original = np.array([(model[i], dataset[i], source[i]) in original for i in range(n)])
    for i in np.flatnonzero(usable & (variation != "O") & ~has_original).tolist():
        excluded.add("no_original_prompt", data.ids[i])  # kept for accuracy and certainty, not consistency
    k = data.n_options
    semantic = np.isin(fam.astype(str), SEMANTIC_FAMILIES)
    cons_row = np.full(n, np.nan)
    for i in np.flatnonzero(usable & (variation != "O") & has_original).tolist():
        same = data.options[i][data.prediction[i]] == original[(model[i], dataset[i], source[i])]
        cons_row[i] = float(not same) if semantic[i] else float(same)
    return RowScores(model, dataset, source, variation, usable, data.correct[np.arange(n), data.prediction],
                     data.correct.sum(axis=1) / k, cons_row, np.where(semantic, 1.0 - 1.0 / k, 1.0 / k), excluded)


def certainties(data: ChoiceData, lac: LAC, rows: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per-row certainty ``1 - (|C| - 1)/(|P| - 1)`` of a conformalized LAC on the merged classes."""
    X, valid, _ = data.merged()
    width = lac.scale.k
    if X.shape[1] > width:
        raise InputError(f"items with {X.shape[1]} options, more than the calibration items ({width})")
    if X.shape[1] < width:  # padding options: probability 0, never in a set
        X = np.hstack([X, np.full((X.shape[0], width - X.shape[1]), PAD_LOGPROB)])
        valid = np.hstack([valid, np.zeros((valid.shape[0], width - valid.shape[1]), bool)])
    sets = option_sets(lac, X[rows], valid[rows])
    classes = valid[rows].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cert = 1.0 - (sets.sum(axis=1) - 1) / (classes - 1)
    out: NDArray[np.float64] = np.where(classes > 1, np.clip(cert, 0.0, 1.0), np.nan)
    return out


def fit_lac(data: ChoiceData, rows: NDArray[np.int64], alpha: float, seed: int | None) -> LAC:
    """PARC's LAC threshold (merged correct classes) from the rows ``rows``."""
    X, _, truth = data.merged()
    lac = LAC(alpha, scale=option_scale(data), random_state=seed)
    lac.conformalize(X[rows], truth[rows] + 1.0)
    return lac


def add_test_rows(
    cell: dict[str, list[float]], rs: RowScores, test: NDArray[np.int64], cert: NDArray[np.float64] | None
) -> None:
    """One split's (or one fitted calibration's) scores of a cell's test rows."""
    if cert is not None and not np.isnan(cert).all():
        cell["certainty"].append(float(np.nanmean(cert)))
    cell["accuracy"].append(float(rs.correct[test].mean()))
    cell["acc_rand"].append(float(rs.acc_rand[test].mean()))
    cons = rs.consistency[test]
    if not np.isnan(cons).all():
        cell["consistency"].append(float(np.nanmean(cons)))
        cell["cons_rand"].append(float(rs.cons_rand[test][~np.isnan(cons)].mean()))
    cell["n"].append(float(test.size))


def cell_entry(model: str, dataset: str, variation: str, c: dict[str, list[float]]) -> dict[str, Any]:
    """A cell's raw and calibrated scores from its per-split values (means over splits)."""
    acc = float(np.mean(c["accuracy"]))
    r = float(np.mean(c["acc_rand"]))
    cert = float(np.mean(c["certainty"])) if c["certainty"] else None
    entry: dict[str, Any] = {
        "model": str(model), "dataset": str(dataset), "variation": str(variation), "family": family_of(str(variation)),
        "n_test": float(np.mean(c["n"])), "acc_rand": r,
        "accuracy": {"raw": acc, "calibrated": calibrated(acc, r) if 0 < r < 1 else None,
                     "power_calibrated": 2 * acc ** reliability_exponent(r) - 1 if 0 < r < 1 else None},
        "certainty": {"raw": cert, "calibrated": cert},
        "reliability": {"raw": reliability(acc, cert) if cert is not None else None,
                        "calibrated": reliability(acc, cert, r) if cert is not None and 0 < r < 1 else None},
    }
    if c["consistency"]:
        mean_cons = float(np.mean(c["consistency"]))
        cr = float(np.mean(c["cons_rand"]))
        entry["consistency"] = {"raw": mean_cons, "calibrated": calibrated(mean_cons, cr) if 0 < cr < 1 else None,
                                "rand": cr}
    else:
        entry["consistency"] = None
    return entry


def parc_report(data: ChoiceData, table: dict[str, dict[str, Any]], excluded: Exclusions, protocol_info: dict[str, Any],
                n: int) -> dict[str, Any]:
    report: dict[str, Any] = {
        "kind": "parc",
        "source": data.source,
        "n": n,
        "n_read": data.n_read,
        "excluded": (data.excluded.to_json() + excluded.to_json()),
        "flags": data.flags.to_json(key="flag"),
        "protocol": protocol_info,
        "cells": table,
    }
    for score in ("accuracy", "certainty", "consistency", "reliability"):
        report[score] = {by: _aggregate(table, score, by) for by in ("variation", "family", "dataset", "model")}
    return report


def evaluate_parc(data: ChoiceData, protocol: Protocol) -> dict[str, Any]:
    """PARC's four scores, raw and calibrated, by variation, family, dataset and model."""
    rs = row_scores(data)
    seeds = protocol.split_seeds("parc")
    cells: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for md in sorted({(m, d) for m, d in zip(rs.model[rs.usable], rs.dataset[rs.usable], strict=True)}):
        rows_md = np.flatnonzero(rs.usable & (rs.model == md[0]) & (rs.dataset == md[1]))
        sources = np.asarray(sorted(set(rs.source[rows_md].tolist())))
        if sources.size < 2:
            for i in rows_md.tolist():
                rs.excluded.add("too_few_items", data.ids[i])
            continue
        for seed in seeds:
            cal_s, _test_s = split_indices(sources.size, seed, protocol.cal_fraction)
            in_cal = np.isin(rs.source[rows_md], sources[cal_s])
            for var in sorted(set(rs.variation[rows_md].tolist())):
                ref = "O" if protocol.reference == "original" else var
                cal = rows_md[in_cal & (rs.variation[rows_md] == ref)]
                test = rows_md[~in_cal & (rs.variation[rows_md] == var)]
                if test.size == 0:
                    continue
                cert = certainties(data, fit_lac(data, cal, protocol.level, seed), test) if cal.size else None
                add_test_rows(cells[(md[0], md[1], var)], rs, test, cert)
    table = {f"{m}|{d}|{v}": cell_entry(m, d, v, c) for (m, d, v), c in sorted(cells.items())}
    info = {"alpha": protocol.level, "seeds": list(seeds), "cal_fraction": protocol.cal_fraction,
            "reference": protocol.reference}
    return parc_report(data, table, rs.excluded, info, int(rs.usable.sum()))


def _aggregate(table: dict[str, dict[str, Any]], score: str, by: str) -> dict[str, Any]:
    """Mean of the cells' raw and calibrated values per value of ``by``."""
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for entry in table.values():
        value = entry.get(score)
        if not value:
            continue
        for kind in ("raw", "calibrated"):
            if value.get(kind) is not None:
                groups[entry[by]][kind].append(value[kind])
    return {
        g: {kind: float(np.mean(v)) for kind, v in kinds.items()} | {"cells": len(kinds.get("raw", []))}
        for g, kinds in sorted(groups.items())
    }


# -- the study part of the parc kind --------------------------------------------------------------


def parc_metrics(variations: Sequence[str], families: Sequence[str], datasets: Sequence[str] = ()) -> list[Metric]:
    """Calibrated scores: per score (reliability, accuracy, certainty, consistency) the model's mean
    over cells, per variation (no consistency for ``O``), per family, and per dataset when several."""
    metrics = count_metrics()
    for score in PARC_SCORES:
        metrics.append(Metric(score, _model_score(score), True))
        metrics += [Metric(f"{score}_{v}", pick(score, "variation", Entry(v), "calibrated"), True)
                    for v in variations if not (score == "consistency" and v == "O")]
        metrics += [Metric(f"{score}_{f}", pick(score, "family", Entry(f), "calibrated"), True) for f in families]
        if len(datasets) > 1:
            metrics += [Metric(f"{score}_dataset_{metric_suffix(d)}", pick(score, "dataset", Entry(d), "calibrated"),
                               True) for d in datasets]
    return metrics


def _model_score(score: str) -> Callable[[Mapping[str, Any]], Any]:
    """The one model's calibrated ``score`` (a harness run has one model); undefined (None) otherwise."""

    def read(report: Mapping[str, Any]) -> Any:
        by_model: Mapping[str, Any] = pick(score, "model")(report)
        if len(by_model) != 1:
            return None
        return pick("calibrated")(next(iter(by_model.values())))

    return read


class ParcStudy(Study):
    """PARC's reliability per variation, raw and calibrated (:func:`evaluate_parc`)."""

    settings = frozenset({"alpha", "splits", "seeds", "random_state", "cal_fraction", "reference"})

    def run(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        return evaluate_parc(data, protocol)

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None, categories: tuple[str, ...] = (),
                *, variations: tuple[str, ...] = (), families: tuple[str, ...] = (),
                datasets: tuple[str, ...] = ()) -> list[Metric]:
        if body is not None:
            reliability = body.get("reliability") or {}
            variations = tuple(reliability.get("variation") or ())
            families = tuple(reliability.get("family") or ())
            datasets = tuple(reliability.get("dataset") or ())
        return parc_metrics(variations, families, datasets)

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        out = counts(body)
        for score in ("reliability", "accuracy"):
            table = body.get(score) or {}
            scores: dict[str, Any] = {}
            models = table.get("model") or {}
            if len(models) == 1:
                scores["overall"] = next(iter(models.values())).get("calibrated")
            for family, value in (table.get("family") or {}).items():
                scores[family] = value.get("calibrated")
            if scores:
                out[score] = scores
        return out

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """The calibrated accuracy and reliability over the model's cells (-1..1; 1: perfect)."""
        return [PrimaryMetric("accuracy|overall", True, 1.0, "accuracy"),
                PrimaryMetric("reliability|overall", True, 1.0, "reliability")]
