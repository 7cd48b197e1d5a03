"""``LikertJudgeTask``: an lm-eval task whose metrics are judgecp's conformal report.

:class:`JudgeReportTask` is what every judgecp task class shares (the
pairwise, multiple-choice and PARC ones live in their own modules): the
settings read from ``metadata`` before the model loads, one aggregation per
metric over the whole task's records, and ``process_results`` returning the
document's record under every metric name.

A benchmark's task folder subclasses it in its ``utils.py`` (the prompt, the
document fields) and names the subclass in its YAML (``class: !function
utils.MyTask``). The class reads the protocol settings from the task's
``metadata`` (see :mod:`judgecp.adapters.lm_eval.metrics`), builds one
aggregation per metric, and turns each document's model output into a
record (:mod:`judgecp.adapters.lm_eval.records`):

* ``output_type: multiple_choice`` (direct scoring): the choices are the
  scale's labels; the record's logprobs are their log-likelihoods;
* ``output_type: generate_until`` (chain of thought): the model returns a
  judge response (JSON with the score-token logprobs found by the core's
  extractor); anything else is excluded as ``response_not_json``.

Documents are normalised by the benchmark to ``id``, ``label`` (raw), and
``group``; ``image_error`` (non-empty) marks a document whose image could
not be read, which is still sent to the model with a blank image and then
excluded as ``image_load_failed``; ``exclude`` names any other reason to
leave a document out (e.g. ``malformed_json_line``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from lm_eval.api.task import ConfigurableTask

from judgecp.adapters.lm_eval import images
from judgecp.adapters.lm_eval.metrics import LikertSettings, Metric, aggregation, likert_metrics
from judgecp.adapters.lm_eval.records import (
    EXCLUDE_IMAGE,
    EXCLUDE_NOT_JSON,
    likert_record,
    parse_judge_response,
)
from judgecp.errors import InputError
from judgecp.scale import LikertScale

logger = logging.getLogger("lm_eval.judgecp")


class JudgeReportTask(ConfigurableTask):
    """An lm-eval task whose metrics are read from one judgecp report over all its records.

    A subclass implements :meth:`read_settings` (from the task's metadata; an
    :class:`~judgecp.errors.InputError` names a bad value before the model
    loads), :meth:`build_metrics` (the metric list, each with its
    aggregation) and :meth:`record` (one document's model output -> record).
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.pop("class", None)  # the factory's marker; not a TaskConfig field
        super().__init__(config=config, **kwargs)
        try:
            self.settings = self.read_settings(self.config.metadata or {})
        except InputError as exc:
            raise InputError(f"task {self.config.task}: {exc}") from exc
        self.check_output_type()
        metrics = self.build_metrics()
        self._judgecp_metrics = [m for m, _ in metrics]
        self._metric_fn_list = {m.name: None for m, _ in metrics}
        self._metric_fn_kwargs = {m.name: {} for m, _ in metrics}
        self._aggregation_list = {m.name: agg for m, agg in metrics}
        self._higher_is_better = {m.name: m.higher_is_better for m, _ in metrics}

    # -- what a subclass provides ------------------------------------------------

    def read_settings(self, metadata: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def check_output_type(self) -> None:
        """Refuse an output type the task's records cannot come from (direct scoring by default)."""
        if self.OUTPUT_TYPE != "multiple_choice":
            raise InputError(
                f"task {self.config.task}: output_type must be multiple_choice (direct scoring), got {self.OUTPUT_TYPE}"
            )

    def build_metrics(self) -> list[tuple[Metric, Callable[[Sequence[Any]], float]]]:
        raise NotImplementedError

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        raise NotImplementedError

    # -- lm-eval hooks ---------------------------------------------------------

    def aggregation(self) -> dict[str, Callable[[Sequence[Any]], float]]:
        return self._aggregation_list

    def higher_is_better(self) -> dict[str, bool | None]:
        return self._higher_is_better

    def process_results(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        """The document's record under every metric name (each aggregation needs the records)."""
        record = self.record(doc, results)
        return {m.name: record for m in self._judgecp_metrics}

    # -- shared by the subclasses ------------------------------------------------

    @staticmethod
    def document_exclusion(doc: Mapping[str, Any]) -> str | None:
        """Why a document cannot be used whatever the model answered, or ``None``.

        A problem with the document itself (e.g. a malformed source line) comes
        first; then an image that could not be read (the model got a blank one).
        """
        image_error = doc.get("image_error") or images.failed(doc)
        return doc.get("exclude") or (EXCLUDE_IMAGE if image_error else None)

    @staticmethod
    def choice_logprobs(labels: Sequence[str], results: Sequence[Any]) -> dict[str, float]:
        """``{label: log-likelihood}`` of a ``multiple_choice`` document's answers, in choice order."""
        return {label: float(ll) for label, (ll, _greedy) in zip(labels, results, strict=True)}

    @staticmethod
    def argmax_label(logprobs: Mapping[str, float]) -> str | None:
        """The label with the highest finite log-likelihood (the model's direct answer), or ``None``."""
        finite = {k: v for k, v in logprobs.items() if not math.isnan(v)}
        return max(finite, key=finite.__getitem__) if finite else None


class LikertJudgeTask(JudgeReportTask):
    """A Likert judge benchmark evaluated with split conformal prediction over the whole task."""

    #: The rating scale; the YAML's ``doc_to_choice`` must list its labels.
    SCALE: ClassVar[LikertScale] = LikertScale(1, 5)
    #: Document fields copied into each record (usable as Mondrian groups).
    RECORD_FIELDS: ClassVar[tuple[str, ...]] = ()

    def read_settings(self, metadata: Mapping[str, Any]) -> LikertSettings:
        return LikertSettings.from_metadata(metadata, scale=self.SCALE)

    def check_output_type(self) -> None:
        if self.OUTPUT_TYPE == "multiple_choice":
            choices = self.doc_to_choice(self.task_docs[0])
            if [str(c).strip() for c in choices] != list(self.SCALE.tokens):
                raise InputError(
                    f"task {self.config.task}: doc_to_choice must be the scale's labels "
                    f"{list(self.SCALE.tokens)}, got {choices}"
                )
        elif self.OUTPUT_TYPE != "generate_until":
            raise InputError(
                f"task {self.config.task}: output_type must be multiple_choice (direct scoring) "
                f"or generate_until (chain of thought), got {self.OUTPUT_TYPE}"
            )

    def build_metrics(self) -> list[tuple[Metric, Callable[[Sequence[Any]], float]]]:
        name = str(self.config.task)
        return [(m, aggregation(m, self.settings, name)) for m in likert_metrics(self.settings)]

    # -- records ---------------------------------------------------------------

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        fields = {f: doc.get(f) for f in self.RECORD_FIELDS}
        common = {"group": doc.get("group"), **fields}
        exclude = self.document_exclusion(doc)
        if self.OUTPUT_TYPE == "multiple_choice":
            logprobs = self.choice_logprobs(self.SCALE.tokens, results)
            best = self.argmax_label(logprobs)
            return likert_record(
                doc["id"], doc.get("label"), logprobs, parsed=None if best is None else int(best),
                exclude=exclude, **common,
            )
        response = parse_judge_response(results[0])
        if response is None:
            return likert_record(
                doc["id"], doc.get("label"), None, exclude=exclude or EXCLUDE_NOT_JSON, **common,
            )
        return likert_record(
            doc["id"], doc.get("label"), response.get("logprobs"), parsed=response.get("parsed"),
            flags=response.get("flags") or (), exclude=exclude, **common,
        )
