"""Judge kinds as units: one module per kind behind one protocol, looked up by name.

A *kind* is what a judge answers and how judgecp treats it: ``likert``
(scores on a rating scale), ``pairwise`` (A/B verdicts in both orders),
``mcq`` (multiple-choice answers), ``parc`` (multiple choice across prompt
variations) and ``ensemble`` (one judge's answers under many prompts).
Each is a :class:`Kind` subclass in its own module of this package and says,
in one place, how its records are read, what its repeated-split study
reports, the metric names a harness shows, how its console table and
headline look, and which kind's calibrator serves it. Every layer (readers,
``judgecp evaluate``/``calibrate``/``apply``, ``gate``, ``report`` and both
harness adapters) looks a kind up with :func:`get_kind` instead of branching
on its name, so a new kind is one module plus its registration through the
``register_kinds`` hook (docs/plugins.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from judgecp.errors import InputError, unknown
from judgecp.hookspecs import hookimpl

if TYPE_CHECKING:
    import argparse

    import pluggy

    from judgecp.data.fields import Fields
    from judgecp.headline import PrimaryMetric
    from judgecp.protocol import Protocol
    from judgecp.scalars import Metric
    from judgecp.tables import Table


class Kind:
    """What judgecp knows about one kind of judge (subclass it; every hook has a default or says why not).

    Class attributes describe the kind; methods read, evaluate and present it.
    Instances hold no state: :func:`get_kind` returns one instance per kind.
    """

    #: The kind's name (``judgecp evaluate --kind NAME``, the reports' ``kind``).
    name: ClassVar[str] = ""
    #: The ``shape`` of the ``judgecp.record/1`` records it reads (``""``: it reads no such records).
    record_shape: ClassVar[str] = ""
    #: Section title in ``judgecp report``.
    title: ClassVar[str] = ""
    #: What a report's ``n`` counts (the console head: "pairs used 120").
    noun: ClassVar[str] = "items"
    #: The kind whose saved calibrator serves this kind (``parc`` records are calibrated as ``mcq``), or None.
    calibrated_as: ClassVar[str | None] = None
    #: Random calibration/test splits when the protocol gives none.
    default_splits: ClassVar[int] = 10
    #: Methods run when the protocol names none (the command line may ask for more).
    default_methods: ClassVar[tuple[str, ...]] = ()
    #: The columns a plain table usually names each record field by (``--label``, ``--prediction``,
    #: ``--logprobs`` override them), the first found wins.
    columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"label": ("label",), "prediction": ("prediction",),
                                                        "logprobs": ("logprobs",)}
    #: Reader options only this kind takes (Likert: ``scale``, ``floor``, ``nan``).
    reader_options: ClassVar[frozenset[str]] = frozenset()
    #: Whether a protocol's ``alphas`` are levels every controller runs at (pairwise), not a sweep.
    levels_are_controller_levels: ClassVar[bool] = False
    #: Protocol settings the kind uses (:func:`judgecp.parse_settings`); another is an error, never ignored.
    settings: ClassVar[frozenset[str]] = frozenset({"alpha", "splits", "seeds", "random_state", "cal_fraction"})
    #: Whether row fields can be the fitted models' inputs (``--row-features``).
    row_features: ClassVar[bool] = False
    #: The field ``judgecp evaluate --example`` tabulates by (the example's groups), if any.
    example_group: ClassVar[str | None] = None

    # -- reading -----------------------------------------------------------------------------
    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        """The table's rows validated as this kind's data (rows left out counted in ``excluded``).

        ``detect``: the kind was inferred from the records' shape, not asked for, so a reader serving
        several kinds of one shape may tell them apart by content (choice records with ``variation``: PARC).
        """
        raise InputError(f"judges of kind {self.name!r} are not read from tables")

    def to_records(self, data: Any) -> list[dict[str, Any]]:
        """The data back as ``judgecp.record/1``-style records, one per row (``judgecp records``, ``apply -o``)."""
        raise InputError(f"judges of kind {self.name!r} are not written as records")

    def check_reader_options(self, options: Mapping[str, Any]) -> None:
        """Refuse reader options of another kind (they would be ignored)."""
        extra = sorted(set(options) - self.reader_options)
        if extra:
            flags = ", ".join("--" + o.replace("_", "-") for o in extra)
            raise InputError(f"{flags}: options of another kind, not of --kind {self.name}")

    def example(self, **options: Any) -> Any:
        """The embedded synthetic example (``judgecp evaluate --example``)."""
        raise InputError(f"--kind {self.name} has no embedded example")

    # -- the repeated-split study ----------------------------------------------------------------
    def study(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        """The report body of the repeated-split study (a plain, JSON-able dict with ``kind``)."""
        raise InputError(f"judges of kind {self.name!r} have no repeated-split study")

    def accepts_method(self, cls: Any) -> bool:
        """Whether a conformal method class can serve this kind (``--methods all`` takes those that can)."""
        return True

    def check_method(self, spec: str, flag: str) -> None:
        """Refuse a method spec this kind cannot run (its name and parameters are already checked)."""

    # -- metric names -------------------------------------------------------------------------------
    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None) -> list[Metric]:
        """The flat scalars of a study, in a harness's order: names from ``protocol`` or, when ``body`` is
        given, from what the report holds (a report read back from JSON)."""
        return []

    def applied_metrics(self) -> list[Metric]:
        """The per-item part of a calibrator's apply summary as scalars (sets by default; pairwise: accept)."""
        from judgecp.calibrators.results import set_summary_metrics

        return set_summary_metrics()

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        """The plain numbers a harness logs beside its results (nested one level)."""
        from judgecp.headline import counts

        return counts(body)

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """The headline's primary metrics, the lead first, from the keys ``flat`` has (the headline
        flattened, ``a|b``); none by default. None may read as its best value when the judge
        abstains on or fails every item (:mod:`judgecp.headline`; ``tests/test_headline_rule.py``
        checks every kind)."""
        return []

    # -- presentation ---------------------------------------------------------------------------
    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        """The console table ``judgecp evaluate`` prints."""
        from judgecp.report import write_head

        write_head(body, out, self.noun)

    def console_detail(self, body: Mapping[str, Any], requested: str | None) -> str | None:
        """The method whose detail the console prints (``--detail``), checked; None when the kind has none."""
        if requested is not None:
            raise InputError(f"--detail goes with --kind likert, not with --kind {self.name}")
        return None

    # -- calibrators (a kind that is its own ``calibrated_as``) -----------------------------------------
    #: What PPI++ estimates for this kind's judges (a calibrator file's ``ppi.target``).
    ppi_target: ClassVar[str] = ""
    #: The calibrator's method when none is asked for (a conformal method, or a risk controller).
    default_calibration_method: ClassVar[str] = ""

    def proxy_and_target(self, data: Any) -> tuple[Any, Any]:
        """The judge's proxy of every item and the human target (NaN where unlabeled), for PPI++."""
        raise InputError(f"judges of kind {self.name!r} have no PPI proxy")

    def drift_statistic(self, data: Any, signal: str) -> tuple[str, Any]:
        """The label-free judge statistic of each item the drift tests compare: (name, values)."""
        raise InputError(f"judges of kind {self.name!r} have no drift statistic")

    def fit_calibrator(self, data: Any, *, method: str | None, alpha: float, groups: str | None,
                       random_state: int | None, signal: str, delta: float) -> Any:
        """A fitted estimator for a saved calibrator (:class:`judgecp.calibrators.fitting.Fitted`)."""
        raise InputError(f"judges of kind {self.name!r} cannot be calibrated")

    def calibrator_parts(self, reader: Any, method: str, alpha: float, n: int) -> Any:
        """The estimator and this kind's fields of a calibrator file, read and checked
        (:class:`judgecp.calibrators.fileformat.KindParts`)."""
        raise InputError(f"judges of kind {self.name!r} have no calibrator file")

    def compatibility(self, cal: Any, data: Any) -> list[str]:
        """What makes a calibrator unfit for these records (warnings under ``--force``); raise when nothing can help."""
        return []

    def apply_calibrator(self, cal: Any, data: Any, *, groups: str | None) -> Any:
        """The calibrator's per-item output on ``data`` and its summary
        (:class:`judgecp.calibrators.applying.ApplyParts`)."""
        raise InputError(f"judges of kind {self.name!r} cannot be calibrated")

    def record_key(self, record: Any) -> str:
        """The key an applied item's output is matched to its records by (``id``; pairs: ``pair_id`` and order)."""
        return str(record.get("id"))

    # -- reports ---------------------------------------------------------------------------------
    #: The section whose entries the report's figures follow one of when judges are side by side
    #: (``methods``; pairwise ``controllers``), or None when they show everything.
    report_focus: ClassVar[str | None] = "methods"

    def report_tables(self, runs: Any) -> list[Any]:
        """``judgecp report``'s tables of this kind's reports (:class:`judgecp.reports.render.Table`)."""
        return []

    def report_figures(self) -> tuple[Any, ...]:
        """``judgecp report``'s figure builders of this kind, in order (:mod:`judgecp.reports.figures`)."""
        return ()

    def group_coverages(self, body: Mapping[str, Any]) -> list[tuple[str, str, Any, int, bool]]:
        """``(group, method, coverage, n, mondrian)`` per group table of a report, for the coverage warnings."""
        return []

    def sweep_entry(self, entry: Mapping[str, Any]) -> tuple[float, float]:
        """An alpha-sweep entry's (coverage, width or set size) for the console."""
        return float(entry["coverage"]), float(entry["set_size"])

    # -- the command line ------------------------------------------------------------------------
    def run_evaluate_command(self, args: argparse.Namespace) -> int | None:
        """Run ``judgecp evaluate --kind NAME`` itself (a kind with its own flags), or None for the common path."""
        return None


def kind_classes(pm: pluggy.PluginManager | None = None) -> dict[str, type[Kind]]:
    """Every registered kind by name, the built-ins first (the ``register_kinds`` hook)."""
    from judgecp.plugins import get_plugin_manager

    pm = pm or get_plugin_manager()
    found: dict[str, type[Kind]] = {}
    for classes in reversed(pm.hook.register_kinds()):  # registration order
        for cls in classes:
            if not cls.name:
                raise RuntimeError(f"{cls.__module__}.{cls.__qualname__}: a kind needs a name")
            if cls.name in found and found[cls.name] is not cls:
                raise RuntimeError(f"two plugins register a kind named {cls.name!r}: "
                                   f"{found[cls.name].__module__} and {cls.__module__}")
            found[cls.name] = cls
    return found


_INSTANCES: dict[type[Kind], Kind] = {}


def get_kind(name: str, *, flag: str = "--kind") -> Kind:
    """The kind called ``name`` (an :class:`InputError` naming the flag and the kinds there are)."""
    classes = kind_classes()
    if name not in classes:
        raise InputError(f"{flag}: {unknown('kind', name, classes)}")
    cls = classes[name]
    if cls not in _INSTANCES:
        _INSTANCES[cls] = cls()
    return _INSTANCES[cls]


def kind_names() -> list[str]:
    return list(kind_classes())


def table_kinds() -> list[str]:
    """The kinds that read plain tables and records (``--kind`` of records, calibrate, apply, estimate)."""
    return [name for name, cls in kind_classes().items() if cls.read is not Kind.read]


def kind_of_shape(shape: str) -> Kind:
    """The kind that reads records of ``shape`` (the first registered; ``parc`` shares ``choice`` with ``mcq``)."""
    for name, cls in kind_classes().items():
        if cls.record_shape == shape:
            return get_kind(name)
    raise InputError(f"no judge kind reads records of shape {shape!r}")


def kinds_of_shape(shape: str) -> list[str]:
    return [name for name, cls in kind_classes().items() if cls.record_shape == shape]


def record_shapes() -> list[str]:
    """The record shapes some registered kind reads."""
    return sorted({cls.record_shape for cls in kind_classes().values() if cls.record_shape})


def calibration_kind(name: str) -> Kind:
    """The kind whose calibrator serves judges of kind ``name`` (an error when none does)."""
    kind = get_kind(name)
    if kind.calibrated_as is None:
        raise InputError(f"judges of kind {name!r} cannot be calibrated (no calibrator serves them)")
    return get_kind(kind.calibrated_as)


@hookimpl
def calibration_kinds() -> list[str]:
    """The kinds a saved calibrator can be of (each its own ``calibrated_as``)."""
    return [name for name, cls in kind_classes().items() if cls.calibrated_as == name]


@hookimpl
def register_kinds() -> list[type[Kind]]:
    """The built-in kinds (this package is a plugin of judgecp, like the methods)."""
    from judgecp.kinds.choice import ChoiceKind, ParcKind
    from judgecp.kinds.ensemble import EnsembleKind
    from judgecp.kinds.likert import LikertKind
    from judgecp.kinds.pairwise import PairwiseKind

    return [LikertKind, PairwiseKind, ChoiceKind, ParcKind, EnsembleKind]


__all__ = [
    "Kind",
    "calibration_kind",
    "calibration_kinds",
    "get_kind",
    "kind_classes",
    "kind_names",
    "kind_of_shape",
    "kinds_of_shape",
    "record_shapes",
    "table_kinds",
]
