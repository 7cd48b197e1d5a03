"""Readers of harness output files (lm-eval samples, VLMEvalKit predictions): the record-format registry.

A plugin registers :class:`RecordFormat` objects with the ``register_record_formats`` hook; each reads a
file into a :class:`RecordBatch` of ``judgecp.record/1`` records, and may recognise its files by content
(``sniff``), which ``--format auto`` uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from judgecp.base.errors import unknown
from judgecp.base.exclusions import Exclusions
from judgecp.base.plugins import get_plugin_manager
from judgecp.data.tables import Table, table_from_rows


@dataclass
class RecordBatch:
    """What a format reader made of a file: its records, and what it could not turn into one."""

    records: list[dict[str, Any]]
    source: str
    excluded: Exclusions = field(default_factory=Exclusions)
    #: Lines or rows read, the ones left out included.
    n_read: int = 0
    #: The reader's own account (files used, repairs, ...), added to reports under its keys.
    info: dict[str, Any] = field(default_factory=dict)
    #: The kind the reader found the file to hold, for rows that are not shaped records (``--kind`` overrides it).
    kind: str | None = None

    def table(self) -> Table:
        table = table_from_rows(self.records, source=self.source, excluded=self.excluded,
                                n_read=self.n_read or len(self.records) + self.excluded.total)
        table.info = dict(self.info)
        return table


@dataclass(frozen=True)
class RecordFormat:
    """A reader of a harness's output files (registered with ``register_record_formats``)."""

    name: str
    description: str
    #: ``read(path, *, kind=None, **options) -> RecordBatch``; ``kind`` is ``--kind`` when given, options come
    #: from the command line (e.g. ``sidecars``).
    read: Callable[..., RecordBatch]
    sniff: Callable[[Path], bool] = lambda path: False


def record_formats(pm: pluggy.PluginManager | None = None) -> dict[str, RecordFormat]:
    pm = pm or get_plugin_manager()
    found: dict[str, RecordFormat] = {}
    for formats in pm.hook.register_record_formats():
        for fmt in formats:
            if fmt.name in found:
                raise RuntimeError(f"two plugins register a record format named {fmt.name!r}")
            found[fmt.name] = fmt
    return found


def record_format(name: str, pm: pluggy.PluginManager | None = None) -> RecordFormat:
    formats = record_formats(pm)
    if name not in formats:
        raise unknown("--format", name, ["table", *formats])
    return formats[name]


def sniff_format(path: Path, pm: pluggy.PluginManager | None = None) -> str:
    """The name of the first registered format that recognises ``path``, else ``"table"``."""
    for name, fmt in record_formats(pm).items():
        if fmt.sniff(path):
            return name
    return "table"


# -- method specs ------------------------------------------------------------------------------
