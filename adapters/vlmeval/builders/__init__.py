"""Build VLMEvalKit TSVs for the judge datasets from the public releases, offline: one module per benchmark.

None of the benchmarks ships a VLMEvalKit TSV with the human label as
``answer`` (nor each pair in both orders, nor PARC's variations), so these
builders read the public files from a local directory and write
``<out>/<name>.tsv`` (VLMEvalKit's format: ``index``, ``image`` as base64,
``question``, ``answer`` = the human label, ``category``, ...) and a manifest
``<out>/<name>.judgecp.json`` with what was read, written and left out.
Nothing is downloaded here; see ``docs/vlmeval.md`` for where to get the
sources. Rows that cannot be judged are counted in the manifest with a
reason (``image_missing``, ``label_missing``, ``label_off_scale``,
``label_not_numeric``, ``field_missing``, ``duplicate_id``,
``malformed_json_line``; pairwise: ``tie_label``, ``label_unknown``; PARC:
``options_invalid``, ``answer_not_an_option``, ``variation_unknown``) and the
dataset's ``evaluate()`` reports them.

An image used by several rows is stored once; later rows hold the first
row's index in ``image`` (VLMEvalKit's own space-saving convention).

Modules: :mod:`.mllm_judge` (scoring and pair-comparison splits),
:mod:`.polaris`, :mod:`.parc`; :mod:`.common` holds what they share. Only
the standard library is used, so the builders run without VLMEvalKit.
"""

from judgecp.adapters.vlmeval.builders.common import BuildResult, manifest_path, read_manifest
from judgecp.adapters.vlmeval.builders.mllm_judge import build_mllm_judge, build_mllm_judge_pair
from judgecp.adapters.vlmeval.builders.parc import build_parc, parc_dataset_name
from judgecp.adapters.vlmeval.builders.polaris import build_polaris, polaris_label

__all__ = ["BuildResult", "build_mllm_judge", "build_mllm_judge_pair", "build_parc", "build_polaris",
           "manifest_path", "parc_dataset_name", "polaris_label", "read_manifest"]
