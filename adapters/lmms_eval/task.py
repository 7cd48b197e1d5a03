"""judgecp's lmms-eval task classes: the lm-eval adapter's judge-report logic on lmms-eval's ``ConfigurableTask``.

lmms-eval 0.7.3's task API is a fork of lm-eval 0.4's: a Python task is a
``ConfigurableTask`` subclass named by its YAML (``class: !function
utils.MyTask``), constructed with ``config=``; ``process_results(doc,
results)`` returns one value per metric; ``aggregation()`` maps each metric
to a function of the task's values; ``higher_is_better()`` says which way is
better. judgecp's lm-eval task classes already do everything through that
interface (:mod:`judgecp.adapters.lm_eval.task`): their methods read only
``config``, ``OUTPUT_TYPE``, ``task_docs`` and ``doc_to_choice``, which
lmms-eval's base class has too. So the classes here **reuse those methods**
(assigned in the class bodies below), and add what differs:

* **documents**: lmms-eval has no ``custom_dataset``; :meth:`JudgeTask.download`
  calls the task class's ``LOADER`` (the lm-eval task folders' loaders) with
  the settings and the YAML's ``dataset_kwargs``, as lm-eval calls a ``custom_dataset``;
* **settings**: lmms-eval has no ``--metadata``; the task's YAML ``metadata``
  overlaid with ``JUDGECP_LMMS_EVAL_METADATA`` (JSON) are the settings;
* **direct scoring**: lmms-eval has no ``gen_prefix`` (the answer prefix,
  ``Score:``, after which lm-eval reads the labels' log-likelihoods); the
  task's YAML ``metadata`` carries it, lmms-eval copies a task's metadata into
  each of its requests, and judgecp's models (``judgecp-hf``) start the answer
  with it: a label's log-likelihood is log P(label | prompt, "Score:"), as in lm-eval;
* **answers**: lmms-eval turns every ``loglikelihood`` answer into its ``str()``
  (:func:`loglikelihood_pair` reads it back); its own models return a loss (mean negative
  log-likelihood) from ``loglikelihood``, not a log-likelihood; a document
  whose values are positive is excluded as ``not_logprobs`` (counted, logged)
  instead of being read as logprobs. Use a judgecp model (``judgecp-hf``).

The lm-eval task classes are lm-eval-specific only through their base
class (and the lm-eval logging filter of their ``__init__``): the planned
package refactor can make them one harness-neutral mixin.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from lmms_eval.api.task import ConfigurableTask

from judgecp.adapters.lm_eval.choice_task import MultipleChoiceTask
from judgecp.adapters.lm_eval.ensemble_task import PromptEnsembleTask
from judgecp.adapters.lm_eval.task import JudgeReportTask, LikertJudgeTask
from judgecp.adapters.lmms_eval import METADATA_ENV
from judgecp.base.errors import InputError
from judgecp.base.scale import LikertScale
from judgecp.data.prompts import choice_seed_prompt

logger = logging.getLogger("lmms_eval.judgecp")

EXCLUDE_NOT_LOGPROBS = "not_logprobs"


def run_settings(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The task's YAML ``metadata`` overlaid with ``JUDGECP_LMMS_EVAL_METADATA`` (a JSON object)."""
    settings = dict(metadata or {})
    raw = os.environ.get(METADATA_ENV, "").strip()
    if raw:
        try:
            extra = json.loads(raw)
        except ValueError as exc:
            raise InputError(f"{METADATA_ENV}: not JSON ({exc})") from None
        if not isinstance(extra, dict):
            raise InputError(f"{METADATA_ENV}: must be a JSON object, got {type(extra).__name__}")
        settings.update(extra)
    return settings


def loglikelihood_pair(value: Any) -> tuple[float, bool]:
    """A ``loglikelihood`` answer as ``(value, is_greedy)``.

    lmms-eval 0.7.3 passes every model answer through ``unwrap_generation_output``,
    which turns a ``(float, bool)`` pair into its ``str()``: ``"(-1.25, False)"``
    (``repr`` of a float round-trips exactly). Pairs are taken as they are.
    """
    if isinstance(value, str):
        parts = value.strip().removeprefix("(").removesuffix(")").split(",")
        if len(parts) != 2 or parts[1].strip() not in ("True", "False"):
            raise ValueError(f"not a log-likelihood answer: {value!r}")
        return float(parts[0]), parts[1].strip() == "True"
    ll, greedy = value
    return float(ll), bool(greedy)


class JudgeTask(ConfigurableTask):  # type: ignore[misc]
    """An lmms-eval task whose metrics are read from one judgecp report over all its records."""

    KIND: ClassVar[str] = "likert"
    RECORD_FIELDS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.pop("class", None)  # the factory's marker; not a TaskConfig field
        config["metadata"] = run_settings(config.get("metadata"))
        super().__init__(config=config, **kwargs)
        self.set_up_judge_report()

    #: The documents: ``LOADER(**settings, **dataset_kwargs)`` returns a ``DatasetDict`` (the lm-eval task
    #: folders' loaders, their ``custom_dataset``); ``None``: lmms-eval's own ``dataset_path`` download.
    LOADER: ClassVar[Callable[..., Any] | None] = None

    def download(self, dataset_kwargs: Mapping[str, Any] | None = None) -> None:
        """The documents from :attr:`LOADER` with the settings (``data_dir``, ...) and the YAML's ``dataset_kwargs``."""
        loader = type(self).LOADER
        if loader is None:
            super().download(dataset_kwargs)
            return
        # As lm-eval calls a custom_dataset: the settings (metadata) and the YAML's dataset_kwargs.
        self.dataset = loader(**{**dict(self.config.metadata or {}), **dict(dataset_kwargs or {})})
        self.dataset_no_image = self.dataset

    def process_results(self, doc: Mapping[str, Any], results: Sequence[Any], full_docs: Any = None) -> dict[str, Any]:
        """The lm-eval task's ``process_results`` on the log-likelihood pairs lmms-eval stringified."""
        if self.OUTPUT_TYPE == "multiple_choice":
            results = [loglikelihood_pair(value) for value in results]
            if any(ll > 0 for ll, _greedy in results):
                doc = {**doc, "exclude": doc.get("exclude") or EXCLUDE_NOT_LOGPROBS}
                logger.warning("judgecp: %s: document %s: the model returned losses, not log-likelihoods "
                               "(an lmms-eval model; use judgecp-hf); excluded as %s",
                               self.config.task, doc.get("id"), EXCLUDE_NOT_LOGPROBS)
        return JudgeReportTask.process_results(self, doc, results)  # type: ignore[no-any-return]

    # -- the lm-eval task class's judge-report methods (module docstring) --------------
    set_up_judge_report = JudgeReportTask.set_up_judge_report
    read_settings = JudgeReportTask.read_settings
    check_output_type = JudgeReportTask.check_output_type
    metrics = JudgeReportTask.metrics
    record = JudgeReportTask.record
    scale = JudgeReportTask.scale
    report = JudgeReportTask.report
    aggregation = JudgeReportTask.aggregation
    higher_is_better = JudgeReportTask.higher_is_better
    document_exclusion = staticmethod(JudgeReportTask.document_exclusion)
    meta = JudgeReportTask.meta
    choice_logprobs = staticmethod(JudgeReportTask.choice_logprobs)


class LikertTask(JudgeTask):
    """A Likert judge benchmark (the lm-eval adapter's :class:`~judgecp.adapters.lm_eval.task.LikertJudgeTask`)."""

    KIND = "likert"
    SCALE: ClassVar[LikertScale] = LikertScale(1, 5)
    CONTINUOUS_LABEL: ClassVar[str | None] = None

    scale = LikertJudgeTask.scale
    check_output_type = LikertJudgeTask.check_output_type
    metrics = LikertJudgeTask.metrics
    record = LikertJudgeTask.record



class ChoiceTask(JudgeTask):
    """Image multiple choice: conformal option sets over the letters (the lm-eval adapter's
    :class:`~judgecp.adapters.lm_eval.choice_task.MultipleChoiceTask`)."""

    KIND = "mcq"

    categories = MultipleChoiceTask.categories
    metrics = MultipleChoiceTask.metrics
    record = MultipleChoiceTask.record
    record_fields = MultipleChoiceTask.record_fields


class EnsembleTask(JudgeTask):
    """Pairwise image preference under every prompt of a prompt set (the lm-eval adapter's
    :class:`~judgecp.adapters.lm_eval.ensemble_task.PromptEnsembleTask`): ``pair`` records, the ensemble study."""

    KIND = "ensemble"

    read_settings = PromptEnsembleTask.read_settings
    metrics = PromptEnsembleTask.metrics
    report = PromptEnsembleTask.report
    record = PromptEnsembleTask.record


def choice_text(doc: Mapping[str, Any], domain: str) -> str:
    """The multiple-choice prompt of the lm-eval task folders (the seed's instruction, the question, the
    options) without their ``<image>`` placeholders; a document left out before judging gets a short one."""
    if doc.get("exclude"):
        return f"(left out: {doc['exclude']})"
    return choice_seed_prompt(
        doc["question"], doc["options"], doc["letters"], domain=domain, context=doc.get("context")
    )
