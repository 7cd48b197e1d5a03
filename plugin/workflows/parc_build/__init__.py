"""Build PARC's prompt variations from multiple-choice VQA data (``judgecp parc build``).

PARC (Schmalfuss et al.; ``../shared/seeds/parc-prompt-reliability.txt``,
section 2.1 and supplement A7) varies each original question in eleven ways:
language reformulations LR-I/C/V and semantic changes LS-N/A/M (through a
language-model rewriter and the supplement's prompts), vision reformulations
VR-B/L/R (Pillow, deterministic) and, for two-image comparative items,
semantic changes VS-S (swap) and VS-E (exchange from an exchange map).
:func:`build` writes the variation directory that ``lm_eval --tasks
parc_cp`` and VLMEvalKit's ``PARC_<name>`` datasets read
(``docs/parc_format.md``), with a manifest. See ``docs/parc_build.md``.

Example
-------
>>> from judgecp.workflows.parc_build import build                      # doctest: +SKIP
>>> result = build("originals.jsonl", "parc_dir", variations="VR-B,VR-R,VS-S")
>>> result.counts, result.content_hash
"""

from judgecp.workflows.parc_build.builder import (
    ALL_VARIATIONS,
    BuildResult,
    build,
    parse_variations,
)
from judgecp.workflows.parc_build.language import (
    check_output,
    clean_output,
    has_more_less,
    negate_by_rule,
    prompt_template,
    rekey,
)
from judgecp.workflows.parc_build.rewriters import (
    FunctionRewriter,
    HFRewriter,
    OpenAIRewriter,
    Rewriter,
    RewriterError,
)
from judgecp.workflows.parc_build.sources import HUB_PRESETS, Original, Originals, load_originals
from judgecp.workflows.parc_build.vision import (
    Exchange,
    ExchangeMap,
    TransformSettings,
    plan_exchanges,
)

__all__ = [
    "ALL_VARIATIONS",
    "HUB_PRESETS",
    "BuildResult",
    "Exchange",
    "ExchangeMap",
    "FunctionRewriter",
    "HFRewriter",
    "OpenAIRewriter",
    "Original",
    "Originals",
    "Rewriter",
    "RewriterError",
    "TransformSettings",
    "build",
    "check_output",
    "clean_output",
    "has_more_less",
    "load_originals",
    "negate_by_rule",
    "parse_variations",
    "plan_exchanges",
    "prompt_template",
    "rekey",
]
