"""``LikertJudgeTask``: an lm-eval task whose metrics are judgecp's conformal report.

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
from judgecp.adapters.lm_eval.metrics import LikertSettings, aggregation, likert_metrics
from judgecp.adapters.lm_eval.records import (
    EXCLUDE_IMAGE,
    EXCLUDE_NOT_JSON,
    likert_record,
    parse_judge_response,
)
from judgecp.errors import InputError
from judgecp.scale import LikertScale

logger = logging.getLogger("lm_eval.judgecp")


class LikertJudgeTask(ConfigurableTask):
    """A Likert judge benchmark evaluated with split conformal prediction over the whole task."""

    #: The rating scale; the YAML's ``doc_to_choice`` must list its labels.
    SCALE: ClassVar[LikertScale] = LikertScale(1, 5)
    #: Document fields copied into each record (usable as Mondrian groups).
    RECORD_FIELDS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.pop("class", None)  # the factory's marker; not a TaskConfig field
        super().__init__(config=config, **kwargs)
        try:
            self.settings = LikertSettings.from_metadata(self.config.metadata, scale=self.SCALE)
        except InputError as exc:
            raise InputError(f"task {self.config.task}: {exc}") from exc
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
        self._judgecp_metrics = likert_metrics(self.settings)
        name = str(self.config.task)
        self._metric_fn_list = {m.name: None for m in self._judgecp_metrics}
        self._metric_fn_kwargs = {m.name: {} for m in self._judgecp_metrics}
        self._aggregation_list = {m.name: aggregation(m, self.settings, name) for m in self._judgecp_metrics}
        self._higher_is_better = {m.name: m.higher_is_better for m in self._judgecp_metrics}

    # -- lm-eval hooks ---------------------------------------------------------

    def aggregation(self) -> dict[str, Callable[[Sequence[Any]], float]]:
        return self._aggregation_list

    def higher_is_better(self) -> dict[str, bool | None]:
        return self._higher_is_better

    def process_results(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        """The document's record under every metric name (each aggregation needs the records)."""
        record = self.record(doc, results)
        return {m.name: record for m in self._judgecp_metrics}

    # -- records ---------------------------------------------------------------

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        fields = {f: doc.get(f) for f in self.RECORD_FIELDS}
        common = {"group": doc.get("group"), **fields}
        image_error = doc.get("image_error") or images.failed(doc)
        # A problem with the document itself (e.g. a malformed source line) comes first.
        exclude = doc.get("exclude") or (EXCLUDE_IMAGE if image_error else None)
        if self.OUTPUT_TYPE == "multiple_choice":
            labels = self.SCALE.tokens
            logprobs = {label: float(ll) for label, (ll, _greedy) in zip(labels, results, strict=True)}
            finite = {k: v for k, v in logprobs.items() if not math.isnan(v)}
            parsed = int(max(finite, key=finite.__getitem__)) if finite else None
            return likert_record(
                doc["id"], doc.get("label"), logprobs, parsed=parsed, exclude=exclude, **common,
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
