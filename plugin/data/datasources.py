"""Where a judge benchmark's documents come from: a local directory, or the public dataset on the hub.

Every task reads the same schema from either source. The local directory is
named by ``--metadata '{"data_dir": "..."}'`` or by the task's environment
variable (documented in its README); without one, the task downloads the
public dataset it names (``dataset_path`` in its YAML) from the Hugging Face
hub into the hub cache. A local copy of a parquet-backed hub dataset holds
its parquet files as the hub repository lays them out (``data/test-*.parquet``,
``ScienceQA-IMG/test-*.parquet``, ...); text datasets may also be one
``<split>.jsonl`` with the same fields.

``datasets`` and ``huggingface_hub`` are imported lazily (extra ``lm-eval``,
as in :mod:`judgecp.workflows.parc_build.sources`); nothing here imports a harness.
A hub that cannot be reached (no network, ``HF_HUB_OFFLINE=1``, an unknown
or gated repository) is one :class:`~judgecp.base.errors.InputError` that names
the local alternative (:func:`from_the_hub`), not a traceback from
``datasets``.
The lm-eval task folders (``judgecp.tasks``) are its users: a
``datasets.DatasetDict`` (:func:`as_dataset_dict`) is what a task's
``custom_dataset`` returns.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError, require
from judgecp.data.tables import read_jsonl


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


#: Exception class names (anywhere in an exception's MRO) that mean the hub did not give the files:
#: huggingface_hub's and datasets' own, and those of the HTTP clients they use. ConnectionError and
#: TimeoutError (built-in) are caught too; datasets turns most of these into a ConnectionError.
HUB_ERRORS = frozenset({"OfflineModeIsEnabled", "LocalEntryNotFoundError", "RepositoryNotFoundError",
                        "GatedRepoError", "DatasetNotFoundError", "HfHubHTTPError", "HTTPError", "ConnectError",
                        "ConnectTimeout", "RequestException", "TransportError"})


def is_hub_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the hub could not be reached or refused the repository."""
    return isinstance(exc, (ConnectionError, TimeoutError)) or bool(
        HUB_ERRORS & {c.__name__ for c in type(exc).__mro__}
    )


def local_alternative(env_var: str | None) -> str:
    """How an lm-eval task reads a local copy instead of the hub."""
    via = f" or {env_var}=DIR" if env_var else ""
    return (f"without the hub, give the task a local copy: --metadata '{{\"data_dir\": \"DIR\"}}'{via} "
            "(the task's README says what DIR holds)")


@contextmanager
def from_the_hub(hub_id: str, local: str) -> Iterator[None]:
    """Around a hub download: a hub that cannot be reached becomes one :class:`InputError`.

    The error names the dataset, why (the first line of the hub client's
    message) and ``local``, the way to do without the hub. Other errors pass
    unchanged.
    """
    try:
        yield
    except Exception as exc:
        if not is_hub_failure(exc):
            raise
        reason = (str(exc).strip().splitlines() or [""])[0] or type(exc).__name__
        offline = ", HF_HUB_OFFLINE is set" if os.environ.get("HF_HUB_OFFLINE", "").strip() not in ("", "0") else ""
        raise InputError(
            f"{hub_id}: the Hugging Face hub cannot give this dataset ({reason}{offline}); {local}"
        ) from exc


def hub_snapshot(repo_id: str, allow_patterns: Sequence[str], *, env_var: str | None = None) -> Path:
    """Download (or reuse from the hub cache) the listed files of a public dataset repository.

    ``env_var``: the task's variable for a local copy, named when the hub cannot be reached.
    """
    hub = require("huggingface_hub", "lm-eval", f"downloading {repo_id}")
    with from_the_hub(repo_id, local_alternative(env_var)):
        path = hub.snapshot_download(repo_id=repo_id, repo_type="dataset", allow_patterns=list(allow_patterns))  # type: ignore[attr-defined]
    return Path(path)


def as_dataset_dict(rows: list[dict[str, Any]], split: str = "test", *, what: str = "this task") -> Any:
    """A ``datasets.DatasetDict`` with one split (every value a string or None, so types never clash).

    Every document gets every field any document has (``None`` where it has
    none): a left-out row's placeholder document may lack fields the others carry.
    """
    datasets = require("datasets", "lm-eval", "judge tasks")
    if not rows:
        raise InputError(f"no documents for {what}")
    keys = list(dict.fromkeys(k for row in rows for k in row))
    full = [{k: row.get(k) for k in keys} for row in rows]
    return datasets.DatasetDict({split: datasets.Dataset.from_list(full)})  # type: ignore[attr-defined]


def text(value: Any) -> str | None:
    """A field as text (labels stay raw: ``4``, ``"4"``, ``4.0`` and ``"0"`` are the core's to judge)."""
    if value is None:
        return None
    return str(value)


def parquet_files(root: Path, split: str, config: str | None = None) -> list[Path]:
    """``<split>-*.parquet`` (or ``<split>.parquet``) files of a local copy in the hub layout.

    With a ``config`` (e.g. ScienceQA's ``ScienceQA-IMG``), its sub-folder is
    searched when the copy has one, as the hub repository keeps one folder
    per config.
    """
    base = root / config if config and (root / config).is_dir() else root
    files = sorted(set(base.rglob(f"{split}-*.parquet")) | set(base.rglob(f"{split}.parquet")))
    return files


def load_table(
    root: Path | None, *, hub_id: str, split: str, config: str | None = None, local_split: str | None = None,
    env_var: str | None = None,
) -> Any:
    """A ``datasets.Dataset``: the local copy's parquet files, or the hub dataset's split.

    ``local_split`` names the split's files in the local copy when they
    differ from the hub split's name (default: the same); ``env_var``: the
    task's variable for a local copy, named when the hub cannot be reached.
    """
    datasets = require("datasets", "lm-eval", "judge tasks")
    if root is None:
        with from_the_hub(hub_id, local_alternative(env_var)):
            if config is None:
                return datasets.load_dataset(hub_id, split=split)  # type: ignore[attr-defined]
            return datasets.load_dataset(hub_id, config, split=split)  # type: ignore[attr-defined]
    name = local_split or split
    files = parquet_files(root, name, config)
    if not files:
        where = f"{root}/{config}" if config and (root / config).is_dir() else str(root)
        raise InputError(f"no {name}-*.parquet under {where}: a local copy of {hub_id} needs the hub's parquet files")
    return datasets.load_dataset("parquet", data_files={name: [str(f) for f in files]}, split=name)  # type: ignore[attr-defined]


def rows_of(
    root: Path | None, *, hub_id: str, split: str, env_var: str | None = None
) -> tuple[list[dict[str, Any] | None], str]:
    """Text rows of a dataset split, and where they came from.

    A local copy holds ``<split>.jsonl`` (one row per line, the hub's fields)
    or the hub's parquet files; a JSONL line that is not a JSON object is
    ``None`` (the task counts it as ``malformed_json_line``).
    """
    if root is not None and (root / f"{split}.jsonl").is_file():
        path = root / f"{split}.jsonl"
        return [row for _lineno, row in read_jsonl(path)], str(path)
    table = load_table(root, hub_id=hub_id, split=split, env_var=env_var)
    where = str(root) if root is not None else f"{hub_id} (split {split})"
    return [dict(row) for row in table], where
