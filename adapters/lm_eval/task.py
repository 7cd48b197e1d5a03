"""The judgecp task classes: a report over the whole task's records, and the Likert judge task.

:class:`JudgeReportTask` is what every judgecp task shares: the protocol read
from ``--metadata`` before the model loads (a bad value is one line naming
``metadata <key>``), one aggregation per metric over the whole task's records,
and ``process_results`` returning the document's ``judgecp.record/1`` record
once, under the first metric (``None`` under the others): the first
aggregation computes the task's report from the records and every other
metric reads it (:class:`judgecp.adapters.lm_eval.metrics.TaskReport`); the
samples file keeps each record once, so ``judgecp evaluate --format lm-eval``
recomputes every metric offline. The metrics depend on the settings (the methods, the levels),
so they cannot be a static ``metric_list``: the class overrides lm-eval's
documented ``Task`` methods ``aggregation()``, ``higher_is_better()`` and
``process_results()``, and sets none of its private attributes.

A benchmark's task folder subclasses one of the task classes in its
``utils.py`` and names it in its YAML (``class: !function utils.MyTask``).
Documents are normalised to ``id``, ``label`` (raw), ``group``;
``image_error`` (non-empty) marks a document whose image could not be read
(still sent with a blank image, then excluded as ``image_load_failed``);
``exclude`` names any other reason to leave a document out.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from lm_eval.api.task import ConfigurableTask

from judgecp.adapters.lm_eval import calibrated, model_name
from judgecp.adapters.lm_eval.metrics import (
    TaskReport,
    aggregations,
    document_values,
    task_protocol,
    task_report,
)
from judgecp.base.errors import InputError
from judgecp.base.records import complete, likeliest, parse_judge_output, score_record
from judgecp.base.scale import LikertScale
from judgecp.data import images
from judgecp.kinds.likert.metrics import likert_metrics
from judgecp.kinds.metrics import Metric
from judgecp.workflows.results import calibrated_metrics

EXCLUDE_IMAGE = "image_load_failed"
EXCLUDE_NOT_JSON = "response_not_json"


class _CustomKwargsHint(logging.Filter):
    """Drops lm-eval's "Custom kwargs can be passed to `--metadata`" hint (docs/lm_eval.md lists the settings)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Custom kwargs can be passed to `--metadata`" not in record.getMessage()


@contextlib.contextmanager
def _without_custom_kwargs_hint() -> Iterator[None]:
    """lm-eval 0.4.13 logs that hint once per task with a ``custom_dataset`` (four lines for ``judgecp_demo``)."""
    task_logger = logging.getLogger(ConfigurableTask.__module__)
    hint = _CustomKwargsHint()
    task_logger.addFilter(hint)
    try:
        yield
    finally:
        task_logger.removeFilter(hint)


class JudgeReportTask(ConfigurableTask):
    """An lm-eval task whose metrics are read from one judgecp report over all its records."""

    #: ``judgecp evaluate --kind`` of the task's records.
    KIND: ClassVar[str] = "likert"
    #: Document fields copied into each record's ``meta`` (usable as Mondrian groups).
    RECORD_FIELDS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.pop("class", None)  # the factory's marker; not a TaskConfig field
        with _without_custom_kwargs_hint():
            super().__init__(config=config, **kwargs)
        self.set_up_judge_report()

    def set_up_judge_report(self) -> None:
        """The settings, the metrics and the task's report, once the harness's base class has
        read the config (lmms-eval's task classes call it too); a bad setting is one line naming
        the task."""
        try:
            self.read_settings(self.config.metadata or {})
        except InputError as exc:
            raise InputError(f"task {self.config.task}: {exc}") from None
        metrics = self.metrics() if self.calibrator is None else calibrated_metrics(self.KIND)
        self._judgecp_metrics = metrics
        #: The task's report, computed once per aggregation round and read by every metric.
        self.judgecp_report = TaskReport(self.report, task=str(self.config.task))
        self._judgecp_aggregations = aggregations(metrics, self.judgecp_report.of)

    # -- what a subclass may change --------------------------------------------------

    def read_settings(self, metadata: Mapping[str, Any]) -> None:
        """The task's settings from ``--metadata`` (the protocol, a calibrator), checked with the output type."""
        self.protocol = task_protocol(metadata, self.KIND)
        self.check_output_type()
        self.calibrator = calibrated.task_calibrator(metadata, self.KIND)

    def check_output_type(self) -> None:
        """Refuse an output type the task's records cannot come from (direct scoring by default)."""
        if self.OUTPUT_TYPE != "multiple_choice":
            raise InputError(f"output_type must be multiple_choice (direct scoring), got {self.OUTPUT_TYPE}")

    def metrics(self) -> list[Metric]:
        raise NotImplementedError

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        raise NotImplementedError

    def scale(self) -> LikertScale | None:
        return None

    # -- lm-eval's Task interface ---------------------------------------------------

    def report(self, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if self.calibrator is not None:
            return calibrated.calibrated_report(
                records, self.calibrator, self.KIND, task=str(self.config.task), scale=self.scale()
            )
        return task_report(records, self.KIND, self.protocol, task=str(self.config.task), scale=self.scale())

    def aggregation(self) -> dict[str, Callable[[Sequence[Any]], float]]:
        return self._judgecp_aggregations

    def higher_is_better(self) -> dict[str, bool | None]:
        return {m.name: m.higher_is_better for m in self._judgecp_metrics}

    def process_results(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        """The document's record under the first metric, ``None`` under the others (module docstring).

        Records name the judge (the model a judgecp model class loaded), so a
        calibrator fitted on them refuses another judge's run.
        """
        record = self.record(doc, results)
        judge = model_name()
        if record.get("judge") is None and judge != "model":
            record = {**record, "judge": judge}
        return document_values(self._judgecp_metrics, record)

    # -- shared by the subclasses ------------------------------------------------------

    @staticmethod
    def document_exclusion(doc: Mapping[str, Any]) -> str | None:
        """Why a document cannot be used whatever the model answered (its own problem first, then its image)."""
        image_error = doc.get("image_error") or images.failed(doc)
        return doc.get("exclude") or (EXCLUDE_IMAGE if image_error else None)

    def meta(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        return {f: doc.get(f) for f in self.RECORD_FIELDS}

    @staticmethod
    def choice_logprobs(labels: Sequence[str], results: Sequence[Any]) -> dict[str, float]:
        """``{label: log-likelihood}`` of a ``multiple_choice`` document's answers, in choice order."""
        return {label: float(ll) for label, (ll, _greedy) in zip(labels, results, strict=True)}


class LikertJudgeTask(JudgeReportTask):
    """A Likert judge benchmark: split conformal prediction over the whole task.

    ``output_type: multiple_choice`` (direct scoring): the choices are the
    scale's labels and the record's logprobs their log-likelihoods.
    ``output_type: generate_until`` (chain of thought): the model returns a
    ``score`` judge output (JSON: text and the score-token logprobs the
    core's extractor found); anything else is excluded as ``response_not_json``.
    """

    KIND = "likert"
    #: The rating scale; the YAML's ``doc_to_choice`` must list its labels.
    SCALE: ClassVar[LikertScale] = LikertScale(1, 5)
    #: A document field with the unbinned human score (Polaris: ``human_score`` on [0, 1]), the label when the
    #: protocol has a ``label_scale`` (``--metadata '{"label_scale": "0:1"}'``); ``None``: ``label`` is used.
    CONTINUOUS_LABEL: ClassVar[str | None] = None

    def scale(self) -> LikertScale:
        return self.SCALE

    def check_output_type(self) -> None:
        if self.OUTPUT_TYPE == "multiple_choice":
            choices = self.doc_to_choice(self.task_docs[0])
            if [str(c).strip() for c in choices] != list(self.SCALE.tokens):
                raise InputError(f"doc_to_choice must be the scale's labels {list(self.SCALE.tokens)}, got {choices}")
        elif self.OUTPUT_TYPE != "generate_until":
            raise InputError(
                f"output_type must be multiple_choice (direct scoring) or generate_until (chain of thought), "
                f"got {self.OUTPUT_TYPE}"
            )

    def metrics(self) -> list[Metric]:
        return likert_metrics(self.protocol)

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        fields = {"label": doc.get("label"), "group": doc.get("group"), "meta": self.meta(doc),
                  "scale": [self.SCALE.minimum, self.SCALE.maximum]}
        own = self.protocol.label_scale
        if own is not None:  # labels on their own scale: the record says which, the core maps them
            fields.update(label=doc.get(self.CONTINUOUS_LABEL or "label"), label_scale=own.to_json())
        exclude = self.document_exclusion(doc)
        if self.OUTPUT_TYPE == "multiple_choice":
            logprobs = self.choice_logprobs(self.SCALE.tokens, results)
            best = likeliest(logprobs)
            return score_record(doc["id"], logprobs=logprobs, prediction=None if best is None else int(best),
                                exclude=exclude, **fields)
        output = parse_judge_output(results[0], "score")
        if output is None:
            return score_record(doc["id"], exclude=exclude or EXCLUDE_NOT_JSON, **fields)
        # The generated text stays in the samples file's response; the record keeps the rest.
        output = {**output, "meta": {k: v for k, v in (output.get("meta") or {}).items() if k != "text"}}
        return complete(output, doc["id"], exclude=exclude, **fields)

