"""Pairwise image preference under every prompt of a prompt set (prompt ensembles): HPSv2 and MJ-Bench.

One document per (item, prompt); the records are read by
``judgecp evaluate --kind ensemble`` (see README.md and
:mod:`judgecp.adapters.lm_eval.ensemble_task`). Items come from a local copy
(``--metadata '{"data_dir": DIR}'`` or ``JUDGECP_HPDV2_DIR`` /
``JUDGECP_MJBENCH_DIR``) or from the hub datasets ``ymhao/HPDv2`` (test
split) and ``MJ-Bench/MJ-Bench`` (gated).
"""

from __future__ import annotations

from typing import Any

from judgecp.data import datasources, images
from judgecp.adapters.lm_eval.ensemble_task import ensemble_dataset
from judgecp.data.ensemble.sources import (
    HPDV2_HUB_ID,
    MJBENCH_HUB_ID,
    MJBENCH_SPLITS,
    balance_order,
    mjbench_item,
    read_hpdv2,
    read_mjbench,
)
from judgecp.base.errors import InputError, require
from judgecp.base.exclusions import Exclusions

__all__ = ["load_hpdv2", "load_mjbench"]

HPDV2_ENV = "JUDGECP_HPDV2_DIR"
MJBENCH_ENV = "JUDGECP_MJBENCH_DIR"


def _prompt_options(metadata: dict[str, Any]) -> dict[str, Any]:
    return {k: metadata.get(k) for k in ("prompt_set", "prompts")} | {"prompt_seed": metadata.get("prompt_seed", 0)}


def load_hpdv2(data_dir: str | None = None, max_items: Any = None, data_seed: Any = 0, **metadata: Any) -> Any:
    """``custom_dataset`` hook: HPD v2 test pairs (every differently ranked pair of a caption's images)."""
    root = datasources.local_dir(data_dir, HPDV2_ENV)
    exclusions = Exclusions()
    items = read_hpdv2(root, split="test", exclusions=exclusions)
    where = str(root) if root else f"{HPDV2_HUB_ID} (test)"
    return ensemble_dataset(items, what=f"HPD v2 in {where}", dataset="hpdv2", reader_exclusions=exclusions,
                            max_items=max_items, data_seed=data_seed, **_prompt_options(metadata))


def load_mjbench(data_dir: str | None = None, max_items: Any = None, data_seed: Any = 0,
                 mjbench_split: str = "quality", **metadata: Any) -> Any:
    """``custom_dataset`` hook: MJ-Bench pairs of one split (``dataset_kwargs.mjbench_split``),
    the candidates of a seeded half swapped (:func:`~judgecp.data.ensemble.sources.balance_order`)."""
    if mjbench_split not in MJBENCH_SPLITS:
        raise InputError(f"MJ-Bench split must be one of {', '.join(MJBENCH_SPLITS)}, got {mjbench_split!r}")
    root = datasources.local_dir(data_dir, MJBENCH_ENV)
    exclusions = Exclusions()
    if root is not None:
        items = read_mjbench(root, split=mjbench_split, exclusions=exclusions)
        where = str(root)
    else:
        # Images stay in the hub table until judged (documents keep references, not pixels).
        datasets: Any = require("datasets", "lm-eval", f"loading {MJBENCH_HUB_ID}")
        table = datasets.load_dataset(MJBENCH_HUB_ID, split=mjbench_split)
        key = f"mjbench:{mjbench_split}"
        images.register_table(key, table, ["image0", "image1"])
        items = []
        text_columns = [c for c in table.column_names if c not in ("image0", "image1")]
        for index, row in enumerate(table.select_columns(text_columns)):
            refs = {c: images.table_ref(key, index, c) for c in ("image0", "image1")}
            try:
                items.append(mjbench_item({**dict(row), **refs}, index, mjbench_split))
            except (KeyError, TypeError, ValueError) as exc:
                exclusions.add(f"malformed MJ-Bench row ({exc})", index)
        where = f"{MJBENCH_HUB_ID} ({mjbench_split})"
    try:
        seed = int(data_seed)
    except (TypeError, ValueError):
        raise InputError(f"metadata data_seed must be an integer, got {data_seed!r}") from None
    items = balance_order(items, random_state=seed)
    return ensemble_dataset(items, what=f"MJ-Bench {mjbench_split} in {where}", dataset=f"mjbench_{mjbench_split}",
                            reader_exclusions=exclusions, max_items=max_items, data_seed=data_seed,
                            **_prompt_options(metadata))
