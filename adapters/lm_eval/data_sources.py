"""Where a judge task's documents come from: a local directory, or the public dataset.

Every task reads the same schema from either source. The local directory is
named by ``--metadata '{"data_dir": "..."}'`` or by the task's environment
variable (documented in its README); without one, the task downloads the
public dataset it names (``dataset_path`` in its YAML) from the Hugging Face
hub into the hub cache.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from judgecp.errors import InputError, require


def local_dir(data_dir: str | os.PathLike[str] | None, env_var: str) -> Path | None:
    """The local directory from metadata (first) or the environment, if any; it must exist."""
    value = data_dir or os.environ.get(env_var)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        source = "metadata data_dir" if data_dir else env_var
        raise InputError(f"{source}={value!r} is not a directory")
    return path


def hub_snapshot(repo_id: str, allow_patterns: Sequence[str]) -> Path:
    """Download (or reuse from the hub cache) the listed files of a public dataset repository."""
    hub = require("huggingface_hub", "lm-eval", f"downloading {repo_id}")
    path = hub.snapshot_download(repo_id=repo_id, repo_type="dataset", allow_patterns=list(allow_patterns))  # type: ignore[attr-defined]
    return Path(path)


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """``(line number, object)`` for every non-blank line; ``None`` for a line that is not a JSON object."""
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
            yield lineno, obj if isinstance(obj, dict) else None


def as_dataset_dict(rows: list[dict[str, Any]], split: str = "test", *, what: str = "this task") -> Any:
    """A ``datasets.DatasetDict`` with one split (every value a string or None, so types never clash)."""
    datasets = require("datasets", "lm-eval", "judge tasks")
    if not rows:
        raise InputError(f"no documents for {what}")
    return datasets.DatasetDict({split: datasets.Dataset.from_list(rows)})  # type: ignore[attr-defined]


def text(value: Any) -> str | None:
    """A field as text (labels stay raw: ``4``, ``"4"``, ``4.0`` and ``"0"`` are the core's to judge)."""
    if value is None:
        return None
    return str(value)
