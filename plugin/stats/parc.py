"""PARC: how reliable is a VLM's multiple-choice answer across prompt variations?

Input: ``choice`` records (:mod:`judgecp.base.records`) that also carry
``source_id`` (the original question), ``variation`` (``O`` for the original
prompt; ``LR-I``, ``LR-C``, ``LR-V``, ``LS-N``, ``LS-A``, ``LS-M``, ``VR-B``,
``VR-L``, ``VR-R``, ``VS-S``, ``VS-E``, or any name with a ``family`` field),
``task`` (the data set) and optionally ``judge`` (the model). The scores are
computed by :func:`judgecp.workflows.study.evaluate_parc`; this module holds
their formulas.

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
from collections.abc import Iterable

from judgecp.base.errors import InputError

FAMILIES = ("LR", "LS", "VR", "VS")
SEMANTIC_FAMILIES = ("LS", "VS")
#: PARC's variations in the paper's order (Table 1).
VARIATIONS = ("O", "LR-I", "LR-C", "LR-V", "LS-N", "LS-A", "LS-M", "VR-B", "VR-L", "VR-R", "VS-S", "VS-E")


def family_of(variation: str) -> str:
    """``O`` for the original prompt, else the prefix before ``-`` (LR, LS, VR, VS)."""
    if variation == "O":
        return "O"
    head = variation.split("-", 1)[0].upper()
    if head not in FAMILIES:
        raise InputError(f"variation {variation!r}: its family is not one of {FAMILIES}; give a 'family' field")
    return head


def variation_order(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """The variations present, in the paper's order (others after them, sorted), and their families.

    The families (``O`` left out) are sorted; a variation whose family is
    unknown (a name without a ``family`` field) gives none.
    """
    present = set(names)
    variations = [v for v in VARIATIONS if v in present] + sorted(present - set(VARIATIONS))
    families = set()
    for v in variations:
        try:
            families.add(family_of(v))
        except InputError:
            continue
    return variations, sorted(families - {"O"})


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
