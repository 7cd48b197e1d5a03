"""A judge kind as a few small parts: how it is read, studied, calibrated and shown.

A *kind* is what a judge answers and how judgecp treats it: ``likert``
(scores on a rating scale), ``pairwise`` (A/B verdicts in both orders),
``mcq`` (multiple-choice answers), ``parc`` (multiple choice across prompt
variations) and ``ensemble`` (one judge's answers under many prompts). A
:class:`Kind` is a name and its parts, each a small object living in the
kind's own package (``judgecp.kinds.likert``, ...):

* :class:`Reader`: tables and records to validated data and back, the embedded example;
* :class:`Study`: the repeated-split study, its flat metric names and headline;
* :class:`Calibration`: a saved calibrator's fit, file fields and per-item output, the PPI proxy
  and the drift statistic (only for kinds that are their own ``calibrated_as``);
* :class:`Presenter`: the console table, the report's tables and figures.

A kind without a part (the ensemble kind reads its records with its own command) says so in one
line when the part is asked for. Every layer above looks a kind up by name
(:func:`judgecp.kinds.registry.get_kind`) instead of branching on it, so a new kind is one package
plus its registration through the ``register_kinds`` hook (docs/plugins.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from judgecp.base.errors import InputError
from judgecp.data.fields import DEFAULT_COLUMNS
from judgecp.present.console import write_head

if TYPE_CHECKING:
    import argparse

    from judgecp.data.fields import Fields
    from judgecp.data.tables import Table
    from judgecp.kinds.metrics import Metric, PrimaryMetric
    from judgecp.kinds.protocol import Protocol

#: Protocol settings every kind takes.
COMMON_SETTINGS = frozenset({"alpha", "splits", "seeds", "random_state", "cal_fraction"})


def counts(report: Mapping[str, Any]) -> dict[str, Any]:
    """``n``, ``n_read`` and ``excluded`` (the count): what every headline starts with."""
    return {"n": report.get("n", 0), "n_read": report.get("n_read", 0),
            "excluded": sum(int(e["count"]) for e in report.get("excluded") or ())}


class Reader:
    """How a kind's judgments are read from a table (or records) and written back as records."""

    #: The ``shape`` of the ``judgecp.record/1`` records it reads.
    record_shape: str = ""
    #: The columns a plain table usually names each record field by (``--label``, ``--prediction``,
    #: ``--logprobs`` override them), the first found wins.
    columns: Mapping[str, tuple[str, ...]] = DEFAULT_COLUMNS
    #: Reader options only this kind takes (Likert: ``scale``, ``floor``, ``nan``).
    options: frozenset[str] = frozenset()
    #: Whether row fields can be the fitted models' inputs (``--row-features``).
    row_features: bool = False

    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        """The table's rows validated as this kind's data (rows left out counted in ``excluded``).

        ``detect``: the kind was inferred from the records' shape, not asked for, so a reader serving
        several kinds of one shape may tell them apart by content (choice records with ``variation``: PARC).
        """
        raise NotImplementedError

    def to_records(self, data: Any) -> list[dict[str, Any]]:
        """The data back as ``judgecp.record/1``-style records, one per row (``judgecp records``, ``apply -o``)."""
        raise NotImplementedError

    def example(self, **options: Any) -> Any:
        """The embedded synthetic example (``judgecp evaluate --example``)."""
        raise NotImplementedError

    def check_options(self, options: Mapping[str, Any], kind: str) -> None:
        """Refuse reader options of another kind (they would be ignored)."""
        extra = sorted(set(options) - self.options)
        if extra:
            flags = ", ".join("--" + o.replace("_", "-") for o in extra)
            raise InputError(f"{flags}: options of another kind, not of --kind {kind}")


class Study:
    """The repeated-split study of a kind and how a harness shows it."""

    #: Random calibration/test splits when the protocol gives none.
    default_splits: int = 10
    #: Methods run when the protocol names none (the command line may ask for more).
    default_methods: tuple[str, ...] = ()
    #: Protocol settings the kind uses (:func:`judgecp.parse_settings`); another is an error, never ignored.
    settings: frozenset[str] = COMMON_SETTINGS
    #: Whether a protocol's ``alphas`` are levels every controller runs at (pairwise), not a sweep.
    levels_are_controller_levels: bool = False
    #: The field ``judgecp evaluate --example`` tabulates by (the example's groups), if any.
    example_group: str | None = None

    def run(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        """The report body of the repeated-split study (a plain, JSON-able dict with ``kind``)."""
        raise NotImplementedError

    def accepts_method(self, cls: Any) -> bool:
        """Whether a conformal method class can serve this kind (``--methods all`` takes those that can)."""
        return True

    def check_method(self, spec: str, flag: str) -> None:
        """Refuse a method spec this kind cannot run (its name and parameters are already checked)."""

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None) -> list[Metric]:
        """The flat scalars of a study, in a harness's order: names from ``protocol`` or, when ``body`` is
        given, from what the report holds (a report read back from JSON)."""
        return []

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        """The plain numbers a harness logs beside its results (nested one level)."""
        return counts(body)

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """The headline's primary metrics, the lead first, from the keys ``flat`` has (the headline
        flattened, ``a|b``); none by default. None may read as its best value when the judge
        abstains on or fails every item (:mod:`judgecp.workflows.headline`;
        ``tests/test_headline_rule.py`` checks every kind)."""
        return []

    def group_coverages(self, body: Mapping[str, Any]) -> list[tuple[str, str, Any, int, bool]]:
        """``(group, method, coverage, n, mondrian)`` per group table of a report, for the coverage warnings."""
        return []

    def sweep_entry(self, entry: Mapping[str, Any]) -> tuple[float, float]:
        """An alpha-sweep entry's (coverage, width or set size) for the console."""
        return float(entry["coverage"]), float(entry["set_size"])


class Calibration:
    """A saved calibrator of the kind (``judgecp calibrate`` / ``apply``) and its PPI++ proxy."""

    #: What PPI++ estimates for this kind's judges (a calibrator file's ``ppi.target``).
    ppi_target: str = ""
    #: The calibrator's method when none is asked for (a conformal method, or a risk controller).
    default_method: str = ""

    def proxy_and_target(self, data: Any) -> tuple[Any, Any]:
        """The judge's proxy of every item and the human target (NaN where unlabeled), for PPI++."""
        raise NotImplementedError

    def drift_statistic(self, data: Any, signal: str) -> tuple[str, Any]:
        """The label-free judge statistic of each item the drift tests compare: (name, values)."""
        raise NotImplementedError

    def fit(self, data: Any, *, method: str | None, alpha: float, groups: str | None,
            random_state: int | None, signal: str, delta: float) -> Any:
        """A fitted estimator for a saved calibrator (:class:`judgecp.kinds.calibration.Fitted`)."""
        raise NotImplementedError

    def parts(self, reader: Any, method: str, alpha: float, n: int) -> Any:
        """The estimator and this kind's fields of a calibrator file, read and checked
        (:class:`judgecp.kinds.calibration.KindParts`)."""
        raise NotImplementedError

    def compatibility(self, cal: Any, data: Any) -> list[str]:
        """What makes a calibrator unfit for these records (warnings under ``--force``); raise when nothing can help."""
        return []

    def apply(self, cal: Any, data: Any, *, groups: str | None) -> Any:
        """The calibrator's per-item output on ``data`` and its summary
        (:class:`judgecp.kinds.calibration.ApplyParts`)."""
        raise NotImplementedError

    def record_key(self, record: Any) -> str:
        """The key an applied item's output is matched to its records by (``id``; pairs: ``pair_id`` and order)."""
        return str(record.get("id"))

    def applied_metrics(self) -> list[Metric]:
        """The per-item part of a calibrator's apply summary as scalars (sets: :func:`judgecp.kinds.metrics.
        set_summary_metrics`; pairwise: accept)."""
        raise NotImplementedError


class Presenter:
    """How a kind's reports look: the console table, ``judgecp report``'s tables and figures."""

    #: Section title in ``judgecp report``.
    title: str = ""
    #: What a report's ``n`` counts (the console head: "pairs used 120").
    noun: str = "items"
    #: The section whose entries the report's figures follow one of when judges are side by side
    #: (``methods``; pairwise ``controllers``), or None when they show everything.
    report_focus: str | None = "methods"

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        """The console table ``judgecp evaluate`` prints."""
        write_head(body, out, self.noun)

    def console_detail(self, body: Mapping[str, Any], requested: str | None, kind: str) -> str | None:
        """The method whose detail the console prints (``--detail``), checked; None when the kind has none."""
        if requested is not None:
            raise InputError(f"--detail goes with --kind likert, not with --kind {kind}")
        return None

    def report_tables(self, runs: Any) -> list[Any]:
        """``judgecp report``'s tables of this kind's reports (:class:`judgecp.present.render.Table`)."""
        return []

    def report_figures(self) -> tuple[Any, ...]:
        """``judgecp report``'s figure builders of this kind, in order."""
        return ()


class Command:
    """A kind that runs ``judgecp evaluate --kind NAME`` itself, with flags of its own (prompt ensembles)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The kind's own flags, as one argument group of ``judgecp evaluate``."""

    def given(self, args: argparse.Namespace) -> list[str]:
        """The kind's own flags given on the command line (an error with any other kind: they would be ignored)."""
        return []

    def run(self, args: argparse.Namespace) -> int:
        """``judgecp evaluate --kind NAME ...``; returns the exit status."""
        raise NotImplementedError

    def hint(self, exc: InputError, args: argparse.Namespace) -> InputError:
        """``exc``, with a hint when the input looks like this kind's records and no kind was given."""
        return exc


class Kind:
    """A kind of judge: its name, the kind whose calibrator serves it, and its parts (module docstring).

    Instances are immutable and hold no data; the registry (:mod:`judgecp.kinds.registry`) holds one per
    name. ``command`` runs ``judgecp evaluate --kind NAME`` itself, for a kind with flags of its own
    (:class:`Command`).
    """

    __slots__ = ("_calibration", "_reader", "_study", "calibrated_as", "command", "name", "presenter")

    def __init__(self, name: str, *, presenter: Presenter, reader: Reader | None = None, study: Study | None = None,
                 calibration: Calibration | None = None, calibrated_as: str | None = None,
                 command: Command | None = None) -> None:
        if not name:
            raise RuntimeError("a kind needs a name")
        for attr, value in (("name", name), ("presenter", presenter), ("_reader", reader), ("_study", study),
                            ("_calibration", calibration), ("calibrated_as", calibrated_as), ("command", command)):
            object.__setattr__(self, attr, value)

    name: str
    presenter: Presenter
    calibrated_as: str | None
    command: Command | None
    _reader: Reader | None
    _study: Study | None
    _calibration: Calibration | None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Kind is immutable ({name})")

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"

    @property
    def title(self) -> str:
        return self.presenter.title

    @property
    def reads_tables(self) -> bool:
        return self._reader is not None

    @property
    def has_study(self) -> bool:
        return self._study is not None

    @property
    def reader(self) -> Reader:
        """The kind's :class:`Reader` (an :class:`InputError` when the kind is not read from tables)."""
        if self._reader is None:
            raise InputError(f"judges of kind {self.name!r} are not read from tables")
        return self._reader

    @property
    def study(self) -> Study:
        """The kind's :class:`Study` (an :class:`InputError` when it has none)."""
        if self._study is None:
            raise InputError(f"judges of kind {self.name!r} have no repeated-split study")
        return self._study

    @property
    def calibration(self) -> Calibration:
        """The kind's :class:`Calibration` (an :class:`InputError` when it cannot be calibrated)."""
        if self._calibration is None:
            raise InputError(f"judges of kind {self.name!r} cannot be calibrated")
        return self._calibration
