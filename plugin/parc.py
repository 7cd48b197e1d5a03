"""PARC: how reliable is a VLM's multiple-choice answer across prompt variations?

Input: multiple-choice records (see :mod:`judgecp.mcq`) that also carry
``source_id`` (the original question), ``variation`` (``O`` for the original
prompt; ``LR-I``, ``LR-C``, ``LR-V``, ``LS-N``, ``LS-A``, ``LS-M``, ``VR-B``,
``VR-L``, ``VR-R``, ``VS-S``, ``VS-E``, or any name with a ``family`` field),
``dataset`` and optionally ``model``.

Scores (PARC sections 2.2-2.3, appendix A8), per (model, dataset, variation):

* accuracy ``acc``: the answer is one of the correct options;
* certainty ``cert = 1 - (|C| - 1)/(|P| - 1)`` from 90% LAC sets over the
  answer classes, correct options merged into one class (their
  probabilities summed), so ``|P|`` counts the merged class once;
* consistency with the original prompt's answer: the same answer for
  reformulations (LR, VR), a different one for semantic changes (LS, VS);
* reliability ``rel = (2 acc^m - 1) cert`` with
  ``m = ln 2 / ln(1/acc_rand)`` (m = 1, the plain ``(2 acc - 1) cert``, is
  reported as ``raw``).

Calibrated accuracy and consistency measure the improvement over random
performance (eq. 5): ``(s - r)/(1 - r)`` above ``r``, ``(s - r)/r`` below.
``acc_rand`` is the mean over items of ``#correct/#options``; the random
consistency is ``1/#options`` for reformulations and ``1 - 1/#options`` for
semantic changes (two independent uniform answers). Certainty needs no
calibration (a uniform chooser's sets hold every class: certainty 0), so its
raw and calibrated values are equal.

The LAC threshold is split-conformal: the source items of each (model,
dataset) are split (``seeds`` times, ``cal_fraction``); the calibration half
of the *same variation* sets it (``reference="variation"``, default) or that
of the *original prompt* (``reference="original"``: how certain the model
stays under variation, relative to its calibrated behaviour on the original;
only then can a confidently wrong model reach reliability -1). Every score is
measured on the test half and averaged over seeds.

Counted in ``excluded``: ``variation_unknown`` (no family), ``too_few_items``
(fewer than 2 source items for a model and dataset), and
``no_original_prompt`` (a variation whose original prompt is missing: it
still counts for accuracy and certainty, but has no consistency).

Guarantees (eq. 6): ``cert >= |rel|`` always. The accuracy guarantee holds
exactly for the power-calibrated accuracy ``2 acc^m - 1`` (reported as
``accuracy.power_calibrated``): ``rel`` is that times ``cert``. Read with
eq. 5's linear calibrated accuracy it holds only for ``rel > 0`` when
``acc_rand >= 0.5`` and for ``rel < 0`` when ``acc_rand <= 0.5``; e.g.
``acc_rand = 0.25, acc = 0.5, cert = 1`` gives ``rel = 0.414`` above the
linear calibrated accuracy ``0.333``. The tests show both.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.conformal import check_alpha
from judgecp.errors import InputError
from judgecp.exclusions import Exclusions
from judgecp.mcq import MCQData, option_scale, option_sets
from judgecp.methods.sets import LAC
from judgecp.protocol import split_indices

FAMILIES = ("LR", "LS", "VR", "VS")
SEMANTIC_FAMILIES = ("LS", "VS")


def family_of(variation: str) -> str:
    """``O`` for the original prompt, else the prefix before ``-`` (LR, LS, VR, VS)."""
    if variation == "O":
        return "O"
    head = variation.split("-", 1)[0].upper()
    if head not in FAMILIES:
        raise InputError(f"variation {variation!r}: its family is not one of {FAMILIES}; give a 'family' field")
    return head


def calibrated(score: float, rand: float) -> float:
    """PARC eq. 5: improvement over random performance, in [-1, 1]."""
    if not 0.0 < rand < 1.0:
        raise ValueError(f"random performance must be in (0, 1), got {rand}")
    return (score - rand) / (1.0 - rand) if score >= rand else (score - rand) / rand


def reliability_exponent(acc_rand: float) -> float:
    """``m = ln 2 / ln(1/acc_rand)``: makes the reliability 0 at random accuracy (A8)."""
    return math.log(2.0) / math.log(1.0 / acc_rand)


def reliability(acc: float, cert: float, acc_rand: float = 0.5) -> float:
    """``(2 acc^m - 1) cert``; ``acc_rand = 0.5`` is the uncalibrated score."""
    return float((2.0 * acc ** reliability_exponent(acc_rand) - 1.0) * cert)


@dataclass(frozen=True)
class PARCProtocol:
    alpha: float = 0.1  # LAC sets at 90%, as in PARC
    seeds: tuple[int, ...] = tuple(range(10))
    cal_fraction: float = 0.5
    reference: str = "variation"

    def __post_init__(self) -> None:
        check_alpha(self.alpha)
        if self.reference not in ("variation", "original"):
            raise InputError(f"reference must be 'variation' or 'original', got {self.reference!r}")


def _certainties(data: MCQData, cal: NDArray[np.int64], test: NDArray[np.int64], alpha: float, seed: int) -> NDArray[np.float64]:
    """Per-test-row certainty from a LAC threshold set on ``cal`` (merged correct classes)."""
    X, valid, truth = data.merged()
    lac = LAC(alpha, scale=option_scale(data), random_state=seed).conformalize(X[cal], truth[cal] + 1.0)
    sets = option_sets(lac, X[test], valid[test])
    classes = valid[test].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cert = 1.0 - (sets.sum(axis=1) - 1) / (classes - 1)
    out: NDArray[np.float64] = np.where(classes > 1, np.clip(cert, 0.0, 1.0), np.nan)
    return out


def evaluate_parc(data: MCQData, protocol: PARCProtocol) -> dict[str, Any]:
    """PARC's four scores, raw and calibrated, by variation, family, dataset and model."""
    for f in ("source_id", "variation"):
        if f not in data.fields:
            raise InputError(f"PARC records need a {f!r} field")
    n = data.n
    variation = data.fields["variation"]
    source = data.fields["source_id"]
    dataset = data.fields.get("dataset", np.full(n, "data"))
    model = data.fields.get("model", np.full(n, "model"))
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
    missing = usable & (variation != "O") & ~has_original
    for i in np.flatnonzero(missing).tolist():
        excluded.add("no_original_prompt", data.ids[i])  # kept for accuracy and certainty, not consistency
    answer = [data.options[i][data.prediction[i]] for i in range(n)]
    k = data.n_options
    correct_pred = data.correct[np.arange(n), data.prediction]
    acc_rand_row = data.correct.sum(axis=1) / k
    semantic = np.isin(fam.astype(str), SEMANTIC_FAMILIES)
    cons_rand_row = np.where(semantic, 1.0 - 1.0 / k, 1.0 / k)
    cons_row = np.full(n, np.nan)
    for i in np.flatnonzero(usable & (variation != "O") & has_original).tolist():
        same = answer[i] == original[(model[i], dataset[i], source[i])]
        cons_row[i] = float(not same) if semantic[i] else float(same)

    cells: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for md in sorted({(m, d) for m, d in zip(model[usable], dataset[usable], strict=True)}):
        rows_md = np.flatnonzero(usable & (model == md[0]) & (dataset == md[1]))
        sources = np.asarray(sorted(set(source[rows_md].tolist())))
        if sources.size < 2:
            for i in rows_md.tolist():
                excluded.add("too_few_items", data.ids[i])
            continue
        for seed in protocol.seeds:
            cal_s, _test_s = split_indices(sources.size, seed, protocol.cal_fraction)
            in_cal = np.isin(source[rows_md], sources[cal_s])
            for var in sorted(set(variation[rows_md].tolist())):
                is_var = variation[rows_md] == var
                ref = "O" if protocol.reference == "original" else var
                cal = rows_md[in_cal & (variation[rows_md] == ref)]
                test = rows_md[~in_cal & is_var]
                if test.size == 0:
                    continue
                cell = cells[(md[0], md[1], var)]
                if cal.size:
                    cert_test = _certainties(data, cal, test, protocol.alpha, seed)
                    if not np.isnan(cert_test).all():
                        cell["certainty"].append(float(np.nanmean(cert_test)))
                cell["accuracy"].append(float(correct_pred[test].mean()))
                cell["acc_rand"].append(float(acc_rand_row[test].mean()))
                cons = cons_row[test]
                if not np.isnan(cons).all():
                    cell["consistency"].append(float(np.nanmean(cons)))
                    cell["cons_rand"].append(float(cons_rand_row[test][~np.isnan(cons)].mean()))
                cell["n"].append(float(test.size))

    table: dict[str, dict[str, Any]] = {}
    for (m, d, v), c in sorted(cells.items()):
        acc = float(np.mean(c["accuracy"]))
        r = float(np.mean(c["acc_rand"]))
        cert = float(np.mean(c["certainty"])) if c["certainty"] else None
        entry: dict[str, Any] = {
            "model": m, "dataset": d, "variation": v, "family": family_of(v), "n_test": float(np.mean(c["n"])),
            "acc_rand": r,
            "accuracy": {"raw": acc, "calibrated": calibrated(acc, r) if 0 < r < 1 else None,
                         "power_calibrated": 2 * acc ** reliability_exponent(r) - 1 if 0 < r < 1 else None},
            "certainty": {"raw": cert, "calibrated": cert},
            "reliability": {"raw": reliability(acc, cert) if cert is not None else None,
                            "calibrated": reliability(acc, cert, r) if cert is not None and 0 < r < 1 else None},
        }
        if c["consistency"]:
            mean_cons = float(np.mean(c["consistency"]))
            cr = float(np.mean(c["cons_rand"]))
            entry["consistency"] = {"raw": mean_cons, "calibrated": calibrated(mean_cons, cr) if 0 < cr < 1 else None, "rand": cr}
        else:
            entry["consistency"] = None
        table[f"{m}|{d}|{v}"] = entry

    report: dict[str, Any] = {
        "kind": "parc",
        "source": data.source,
        "n": int(usable.sum()),
        "n_read": data.n_read,
        "excluded": (data.excluded.to_json() + excluded.to_json()),
        "flags": data.flags.to_json(key="flag"),
        "protocol": {"alpha": protocol.alpha, "seeds": list(protocol.seeds), "cal_fraction": protocol.cal_fraction,
                     "reference": protocol.reference},
        "cells": table,
    }
    for score in ("accuracy", "certainty", "consistency", "reliability"):
        report[score] = {by: _aggregate(table, score, by) for by in ("variation", "family", "dataset", "model")}
    return report


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
