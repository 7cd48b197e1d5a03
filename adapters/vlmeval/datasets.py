"""judgecp's judge datasets as VLMEvalKit dataset classes (imports VLMEvalKit).

Import this module only where VLMEvalKit is installed;
:func:`judgecp.adapters.vlmeval.register.register` does, and adds the classes
to VLMEvalKit's registries. The classes are thin: the prompt, fields and
scale come from :mod:`~judgecp.adapters.vlmeval.specs`, evaluation from
:mod:`~judgecp.adapters.vlmeval.evaluation`.

* ``TYPE = "JudgeCP"`` and ``force_use_dataset_prompt = True``: no model
  wrapper replaces the paper's prompt with its own (VLMEvalKit asks the
  dataset for the prompt first when this flag is set).
* The TSV is local: ``$LMUData/<name>.tsv`` built by
  ``judgecp vlmeval build-tsv``; nothing is downloaded.
* Rows without a usable image (empty cell, or bytes that do not decode) are
  left out at load time and counted (``image_missing``, ``image_unreadable``)
  instead of VLMEvalKit's silent ``skip_noimg`` drop; ``evaluate()`` reports
  them.
* ``evaluate()`` writes the kind's metric file beside the prediction file
  (``<model>_<dataset>_cp.json`` for Likert judges, ``_selective.json`` for
  pairwise judging, ``_reliability.json`` for PARC) and returns the headline
  metrics as plain floats.

Classes: ``MLLMJudgeCP``, ``PolarisCP`` (Likert), ``MLLMJudgePairCP``
(pairwise, both orders), ``PARCCP`` (PARC variation datasets, any name
``PARC_<name>`` built into ``$LMUData``). A new judge dataset of a known
kind is a subclass setting ``SPEC`` (see docs/vlmeval.md, "Adding a judge
dataset").
"""

from __future__ import annotations

import ast
import base64
import binascii
import io
import json
import os.path as osp
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
from vlmeval.dataset.image_base import ImageBaseDataset
from vlmeval.smp import LMUDataRoot, load, toliststr

from judgecp.adapters.vlmeval.builders import read_manifest
from judgecp.adapters.vlmeval.calibrated import calibrated_evaluation
from judgecp.adapters.vlmeval.evaluation import (
    dataset_protocol,
    evaluate_prediction_file,
    metric_path,
)
from judgecp.adapters.vlmeval.runtime import PROMPTS
from judgecp.adapters.vlmeval.specs import (
    DATASET_TYPE,
    MLLM_JUDGE,
    MLLM_JUDGE_PAIR,
    PARC,
    POLARIS,
    JudgeSpec,
)
from judgecp.adapters.vlmeval.summary import primary_keys
from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.kinds import get_kind


def _image_ok(cell: str) -> bool:
    try:
        raw = base64.b64decode(cell, validate=False)
    except (binascii.Error, ValueError):
        return False
    if not raw:
        return False
    try:
        from PIL import Image

        with Image.open(io.BytesIO(raw)) as im:
            im.verify()
    except Exception:
        return False
    return True


def _images_of(cell: str) -> list[str] | None:
    """The base64 images of a full image cell: one, or VLMEvalKit's ``str(list)`` of several (``None``: unparseable)."""
    if cell.startswith("["):
        try:
            value = ast.literal_eval(cell)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            return None
        return value
    return [cell]


class JudgeCPDataset(ImageBaseDataset):  # type: ignore[misc]
    """Base of judgecp's VLMEvalKit judge datasets (one subclass per :class:`JudgeSpec`)."""

    TYPE = DATASET_TYPE
    MODALITY = "IMAGE"
    SPEC: ClassVar[JudgeSpec]
    DATASET_URL: ClassVar[dict[str, str]] = {}
    DATASET_MD5: ClassVar[dict[str, str]] = {}
    force_use_dataset_prompt = True

    def __init__(
        self,
        dataset: str = "",
        alpha: float | None = None,
        methods: str | list[str] | None = None,
        seeds: int | str | list[int] | None = None,
        cal_fraction: float | None = None,
        mondrian: str | None = None,
        alphas: float | str | list[float] | None = None,
        n_splits: int | None = None,
        signal: str | None = None,
        controllers: str | list[str] | None = None,
        delta: float | None = None,
        headline_alpha: float | None = None,
        reference: str | None = None,
        skip_noimg: bool = True,
        calibrator: str | None = None,
        label_scale: str | None = None,
        force: bool = False,
    ) -> None:
        # The protocol's settings as given (None: the kind's default, judgecp.kinds.protocol), checked now.
        self.settings: dict[str, Any] = dict(
            alpha=alpha, methods=methods, seeds=seeds, cal_fraction=cal_fraction, mondrian=mondrian,
            alphas=alphas, n_splits=n_splits, signal=signal, controllers=controllers, delta=delta,
            headline_alpha=headline_alpha, reference=reference, label_scale=label_scale,
        )
        self.protocol = dataset_protocol(self.SPEC.kind, self.settings)
        self.calibrator = calibrator  # a saved calibrator: evaluate() applies it instead (docs/calibrators.md)
        if not isinstance(force, bool):
            raise InputError(f"dataset argument force: expected true or false, got {force!r}")
        self.force = force  # apply the calibrator even when fitted on another judge, task or scale
        self.excluded_at_load = Exclusions()
        if not dataset and not self.SPEC.names:
            raise InputError(f"{type(self).__name__} needs its dataset name (e.g. \"dataset\": \"PARC_mmbench\")")
        super().__init__(dataset=dataset or self.SPEC.names[0], skip_noimg=skip_noimg)

    @classmethod
    def supported_datasets(cls) -> list[str]:
        return list(cls.SPEC.names)

    def tsv_path(self, dataset: str | None = None) -> str:
        return osp.join(LMUDataRoot(), f"{dataset or self.dataset_name}.tsv")

    def load_data(self, dataset: str) -> pd.DataFrame:
        path = self.tsv_path(dataset)
        if not osp.exists(path):
            raise FileNotFoundError(
                f"{path} does not exist: build it from the public release with "
                f"`judgecp vlmeval build-tsv {self.SPEC.key} --source DIR --out {LMUDataRoot()}` (docs/vlmeval.md)"
            )
        data = load(path)
        data["index"] = [str(x) for x in data["index"]]
        if "image" in data:
            cells = ["" if pd.isna(x) else str(x) for x in data["image"]]
            full = {i: c for i, c in zip(data["index"], cells, strict=True) if len(c) > 64}
            checked: dict[str, bool] = {}
            keep = []
            for index, cell in zip(data["index"], cells, strict=True):
                target = cell if len(cell) > 64 else full.get(cell, "")
                if not target:
                    self.excluded_at_load.add("image_missing", index)
                    keep.append(False)
                    continue
                if target not in checked:
                    images = _images_of(target)
                    checked[target] = images is not None and all(_image_ok(x) for x in images)
                if not checked[target]:
                    self.excluded_at_load.add("image_unreadable", index)
                    keep.append(False)
                    continue
                keep.append(True)
            # a kept row may refer to a dropped row's image only if that image was fine: inline it
            kept = data[keep].copy()
            kept["image"] = [c if len(c) > 64 else full[c] for c, k in zip(cells, keep, strict=True) if k]
            data = kept
        return data

    def build_prompt(self, line: Any) -> list[dict[str, str]]:
        if isinstance(line, int):
            line = self.data.iloc[line]
        tgt_path = toliststr(line["image_path"]) if self.meta_only else self.dump_image(line)
        text = self.SPEC.render(line)
        msgs = [dict(type="image", value=p) for p in toliststr(tgt_path)]
        msgs.append(dict(type="text", value=text))
        letters = get_kind(self.SPEC.kind).reader.record_shape != "score"  # verdicts and options, not scores
        meta = {"letters": list(self.SPEC.answer_letters(line))} if letters else None
        PROMPTS.register(self.dataset_name, msgs, line["index"], meta)
        return msgs

    def evaluate(self, eval_file: str, **judge_kwargs: Any) -> dict[str, Any]:
        if self.calibrator:

            return calibrated_evaluation(eval_file, self.calibrator, dataset=self.dataset_name, force=self.force)[0]
        outcome = evaluate_prediction_file(
            eval_file,
            spec=self.SPEC,
            settings=self.settings,
            dataset=self.dataset_name,
            excluded_at_load=self.excluded_at_load,
            build_manifest=read_manifest(self.tsv_path()),
        )
        if outcome.errors:  # every row unusable: fail this dataset in VLMEvalKit's way (see docs/vlmeval.md)
            where = outcome.metric_file.name if outcome.metric_file is not None else "the metric file"
            raise InputError(f"{self.dataset_name}: judgecp has no metrics for this run: {outcome.errors[0]}; "
                             f"counts in {where}")
        return outcome.headline

    @classmethod
    def report_primary_metric(cls, metrics: dict[str, Any] | None) -> dict[str, float | int]:
        """The headline's primary numbers: its ``...|overall`` keys, in name order.

        Likert: the first method's label-set coverage and width; pairwise: SCOPE's
        coverage and risk at the headline level; PARC: the calibrated accuracy and
        reliability over all cells of the model; a saved calibrator: set size and
        labeled coverage (pairwise: abstention and labeled risk). In name order,
        because VLMEvalKit's summary without judgecp picks the first of them by name
        (:mod:`judgecp.adapters.vlmeval.summary`).
        """
        if not isinstance(metrics, dict):
            return {}
        return {k: metrics[k] for k in primary_keys(metrics)}

    @classmethod
    def report_judge_err(
        cls,
        prediction_file: str | Path | None,
        *,
        total_samples: int | None,
        judge_model: str | None = None,
        error_message: str | None = None,
    ) -> dict[str, int | None]:
        """Rows without a usable judge output (read from the metric file), out of the rows read."""
        if prediction_file is None:
            return dict(failed=0, total=total_samples)
        path = metric_path(prediction_file, cls.SPEC.kind)
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return dict(failed=total_samples if error_message else 0, total=total_samples)
        n_read = int(report.get("n_read") or 0)
        used = (report.get("vlmeval") or {}).get("rows_used")  # pairwise: rows, not pairs
        return dict(failed=n_read - int(used if used is not None else report.get("n") or 0), total=n_read)


class MLLMJudgeCP(JudgeCPDataset):
    """MLLM-as-a-Judge scoring split (14 task categories), human score 1-5 as answer."""

    SPEC = MLLM_JUDGE


class PolarisCP(JudgeCPDataset):
    """Polaris caption quality, mean human score binned to 1-5 as answer (``label_scale="0:1"``: the unbinned
    mean, ``score_mean``, mapped to 1 + 4 mean; interval methods only)."""

    SPEC = POLARIS


class MLLMJudgePairCP(JudgeCPDataset):
    """MLLM-as-a-Judge pair comparisons, each pair twice (responses swapped); verdict "A" or "B"."""

    SPEC = MLLM_JUDGE_PAIR


class PARCCP(JudgeCPDataset):
    """PARC variation datasets (``PARC_<name>``, built from the local variation format); option letters."""

    SPEC = PARC

    @classmethod
    def supported_datasets(cls) -> list[str]:
        """Every ``PARC_<name>`` TSV in ``$LMUData`` whose build manifest says PARC (no fixed name)."""
        names = list(cls.SPEC.names)
        for tsv in sorted(Path(LMUDataRoot()).glob("PARC_*.tsv")):
            manifest = read_manifest(tsv)
            if manifest is not None and manifest.get("kind") == "parc" and tsv.stem not in names:
                names.append(tsv.stem)
        return names


DATASET_CLASSES: tuple[type[JudgeCPDataset], ...] = (MLLMJudgeCP, PolarisCP, MLLMJudgePairCP, PARCCP)
