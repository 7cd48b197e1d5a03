"""The multiple-choice kinds: conformal option sets (``mcq``) and PARC's reliability across prompts (``parc``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from judgecp.errors import InputError
from judgecp.headline import PrimaryMetric
from judgecp.kinds import Kind
from judgecp.scalars import metric_suffix

if TYPE_CHECKING:
    from judgecp.data.fields import Fields
    from judgecp.protocol import Protocol
    from judgecp.scalars import Metric
    from judgecp.tables import Table


class ChoiceKind(Kind):
    """Multiple-choice answers: records of shape ``choice`` (options, correct option(s), option logprobs)."""

    name = "mcq"
    record_shape = "choice"
    title = "Multiple choice: conformal option sets"
    calibrated_as = "mcq"
    columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"label": ("label", "correct", "answer"), "prediction": ("prediction",), "logprobs": ("logprobs",)}
    default_methods: ClassVar[tuple[str, ...]] = ("lac", "aps", "aps(randomized=False)", "raps", "margin")
    settings = frozenset({"alpha", "alphas", "methods", "splits", "seeds", "random_state", "cal_fraction", "group"})

    ppi_target = "accuracy"
    default_calibration_method = "lac"

    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        from judgecp.data.choice import choice_data

        self.check_reader_options(options)
        return choice_data(table, fields, kind=None if detect else self.name, require_label=require_label)

    def to_records(self, data: Any) -> list[dict[str, Any]]:
        from judgecp.data.export import choice_records

        return choice_records(data)

    def example(self, **options: Any) -> Any:
        from judgecp.data import from_records
        from judgecp.simulate import simulate_mcq_records

        self.check_reader_options(options)
        return from_records(simulate_mcq_records(), source="example: synthetic MCQ model")

    def accepts_method(self, cls: Any) -> bool:
        """Options have no order: set methods that do not use it."""
        return bool(cls.output == "set" and not cls.ordinal)

    def check_method(self, spec: str, flag: str) -> None:
        from judgecp.methods.variants import VARIANT_OPTIONS
        from judgecp.plugins import method_classes, parse_method_spec

        name, kwargs = parse_method_spec(spec)
        if not self.accepts_method(method_classes()[name]):
            raise InputError(f"{flag}: method {name!r} relies on ordered labels; multiple-choice options have no order")
        if any(k in kwargs for k in VARIANT_OPTIONS):
            raise InputError(f"{flag}: {spec}: conditional=, cv= and features= are for Likert labels")
        if kwargs.get("probabilities") == "recalibrated":
            raise InputError(f"{flag}: {spec}: option letters are not classes shared across items; "
                             "use the model's own probabilities")

    def study(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        from judgecp.evaluation.choice import evaluate_choices

        return evaluate_choices(data, protocol)

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None, categories: tuple[str, ...] = ()) -> list[Metric]:
        from judgecp.scalars import mcq_metrics

        if body is not None:
            protocol = protocol.with_(methods=tuple(body["methods"]) or None)
            categories = tuple(body.get("by_category") or ())
        return mcq_metrics(protocol, categories)

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        out = super().headline(body, protocol)
        if "accuracy" in body:
            out["accuracy"] = body["accuracy"]
        for name, entry in (body.get("methods") or {}).items():
            out[name] = {"coverage": entry["coverage"], "set_size": entry["set_size"]}
        return out

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """The first method's coverage and mean set size: every option in every set (a judge
        that says nothing) reads the largest size, not a coverage alone."""
        for key in flat:
            if key.endswith("|set_size"):
                method = key[: -len("|set_size")]
                suffix = metric_suffix(method)
                return [PrimaryMetric(f"{method}|coverage", None, None, f"coverage_{suffix}"),
                        PrimaryMetric(key, False, 1.0, f"set_size_{suffix}")]
        return []

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        from judgecp.report import write_mcq_table

        super().write_console(body, out)
        write_mcq_table(body, out)


    # -- reports ---------------------------------------------------------------------------------
    def report_tables(self, runs: Any) -> list[Any]:
        from judgecp.reports import mcq_tables

        return mcq_tables(runs)

    def report_figures(self) -> tuple[Any, ...]:
        from judgecp.reports import figures as f

        return (f.mcq_methods, f.mcq_sweep, f.mcq_groups, f.set_size_hist)

    def group_coverages(self, body: Mapping[str, Any]) -> list[tuple[str, str, Any, int, bool]]:
        return [(g, method, m["coverage"], entry["n"], False)
                for key, table in body.items() if key.startswith("by_") and isinstance(table, Mapping)
                for g, entry in table.items() for method, m in entry.get("methods", {}).items()]

    # -- calibrators ------------------------------------------------------------------------------
    def proxy_and_target(self, data: Any) -> tuple[Any, Any]:
        """The probability of the predicted option and whether it is correct."""
        import numpy as np

        from judgecp.calibrators.statistics import choice_probabilities

        rows = np.arange(data.n)
        f = choice_probabilities(data)[rows, data.prediction]
        correct = data.correct[rows, data.prediction].astype(np.float64)
        return f, np.where(data.labeled, correct, np.nan)

    def drift_statistic(self, data: Any, signal: str) -> tuple[str, Any]:
        from judgecp.calibrators.statistics import choice_probabilities

        return "top_option_probability", choice_probabilities(data).max(axis=1)

    def fit_calibrator(self, data: Any, *, method: str | None, alpha: float, groups: str | None,
                       random_state: int | None, signal: str, delta: float) -> Any:
        from judgecp.calibrators.fitting import Fitted, check_saveable, check_size
        from judgecp.estimators import ChoiceSets
        from judgecp.plugins import check_method_spec
        from judgecp.scale import LikertScale

        if groups:
            raise InputError("groups (Mondrian) are for Likert calibrators")
        check_size(alpha, data.n)
        spec = check_method_spec(method or self.default_calibration_method, kind="mcq", flag="--method")
        check_saveable(spec, alpha, LikertScale(1, max(data.k, 2)))
        est = ChoiceSets(spec, confidence_level=1.0 - alpha, random_state=random_state).calibrate(data)
        return Fitted(est, spec, options=sorted({o for opts in data.options for o in opts}))

    def calibrator_parts(self, reader: Any, method: str, alpha: float, n: int) -> Any:
        from judgecp.calibrators.fileformat import choice_parts

        return choice_parts(reader, method, alpha, n)

    def compatibility(self, cal: Any, data: Any) -> list[str]:
        width = int(cal.estimator.width_)
        if data.k > width:
            raise InputError(f"items with {data.k} options; the calibrator saw at most {width}")
        letters = sorted({o for opts in data.options for o in opts} - set(cal.options or []))
        return [f"options {letters} never seen in calibration (options {cal.options})"] if letters else []

    def apply_calibrator(self, cal: Any, data: Any, *, groups: str | None) -> Any:
        """Option sets per item; coverage (a correct option in the set) on the run's labeled items."""
        from judgecp.calibrators.applying import (
            ApplyParts,
            choice_coverage_check,
            coverage_section,
            set_outputs,
            set_summary,
        )

        choice = cal.estimator.predict(data)
        sets = choice.option_sets()
        covered = (choice.sets & data.correct[:, : choice.sets.shape[1]]).any(axis=1)
        labeled = data.labeled
        section = coverage_section(covered, labeled, cal.alpha, choice_coverage_check(cal, data, covered)) \
            if labeled.any() else None
        # A row the calibrator could not use gets every option it knows: a set that covers.
        return ApplyParts(set_summary(choice.size, data.n), section, sets=sets,
                          outputs=set_outputs(data.ids, sets), unused={"set": list(cal.options or []) or None})


class ParcKind(ChoiceKind):
    """PARC: multiple-choice records across prompt variations (``source_id``, ``variation``, ``dataset``)."""

    name = "parc"
    title = "PARC: reliability across prompt variations"
    noun = "records"
    default_methods = ()
    settings = frozenset({"alpha", "splits", "seeds", "random_state", "cal_fraction", "reference"})

    def example(self, **options: Any) -> Any:
        from judgecp.data import from_records
        from judgecp.simulate import simulate_parc_records

        self.check_reader_options(options)
        return from_records(simulate_parc_records(), source="example: synthetic PARC records")

    def study(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        from judgecp.evaluation.parc import evaluate_parc

        return evaluate_parc(data, protocol)

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None, categories: tuple[str, ...] = (),
                *, variations: tuple[str, ...] = (), families: tuple[str, ...] = (),
                datasets: tuple[str, ...] = ()) -> list[Metric]:
        from judgecp.scalars import parc_metrics

        if body is not None:
            reliability = body.get("reliability") or {}
            variations = tuple(reliability.get("variation") or ())
            families = tuple(reliability.get("family") or ())
            datasets = tuple(reliability.get("dataset") or ())
        return parc_metrics(variations, families, datasets)

    report_focus = None

    def report_tables(self, runs: Any) -> list[Any]:
        from judgecp.reports import parc_tables

        return parc_tables(runs)

    def report_figures(self) -> tuple[Any, ...]:
        from judgecp.reports import figures as f

        return (f.parc_heatmaps,)

    def group_coverages(self, body: Mapping[str, Any]) -> list[tuple[str, str, Any, int, bool]]:
        return []

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        out = Kind.headline(self, body, protocol)
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

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        from judgecp.report import write_head, write_parc_table

        write_head(kept_apart(body), out, self.noun)
        write_parc_table(body, out)


#: Reasons a PARC report counts among ``excluded`` for records it still uses: a variation whose
#: original prompt is missing keeps its accuracy and certainty, and has no consistency.
KEPT_REASONS = {"no_original_prompt": "no_original_prompt (no consistency)"}


def kept_apart(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The report's head as the console shows it: records still used are flags (kept), not excluded
    ("records used 34 (read 34); excluded: no_original_prompt 1" read as a contradiction)."""
    excluded = list(body.get("excluded") or [])
    kept = [e for e in excluded if e["reason"] in KEPT_REASONS]
    if not kept:
        return body
    return {**body, "excluded": [e for e in excluded if e["reason"] not in KEPT_REASONS],
            "flags": [*(body.get("flags") or []),
                      *({"flag": KEPT_REASONS[e["reason"]], "count": e["count"]} for e in kept)]}
