"""The TSV builders of the judge datasets, by benchmark (:mod:`judgecp.adapters.vlmeval.builders`)."""

from judgecp.adapters.vlmeval.builders.common import BuildResult, manifest_path, read_manifest
from judgecp.adapters.vlmeval.builders.mllm_judge import build_mllm_judge, build_mllm_judge_pair
from judgecp.adapters.vlmeval.builders.parc import build_parc, parc_dataset_name
from judgecp.adapters.vlmeval.builders.polaris import build_polaris, polaris_label

__all__ = ["BuildResult", "build_mllm_judge", "build_mllm_judge_pair", "build_parc", "build_polaris",
           "manifest_path", "parc_dataset_name", "polaris_label", "read_manifest"]
