"""The plugin manager and the registries: methods, controllers, record formats, commands.

Plugins are discovered through the ``judgecp`` entry-point group. judgecp's
own harness adapters are entry points of the judgecp distribution and are
always loaded (that is how the core reaches them without importing them);
set ``JUDGECP_DISABLE_PLUGIN_AUTOLOAD=1`` to leave out every other
distribution's plugins.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from judgecp.base import hookspecs
from judgecp.stats.conformal import ConformalMethod, init_parameters
from judgecp.base.errors import InputError, MissingDependencyError, did_you_mean, unknown
from judgecp.base.exclusions import Exclusions
from judgecp.base.scale import LikertScale

if TYPE_CHECKING:
    from judgecp.data.tables import Table

ENTRY_POINT_GROUP = "judgecp"
DISABLE_AUTOLOAD_ENV = "JUDGECP_DISABLE_PLUGIN_AUTOLOAD"
BUILTIN_PLUGINS = ("judgecp.stats.methods", "judgecp.data.extraction", "judgecp.stats.selective", "judgecp.kinds")


def make_plugin_manager(*, autoload: bool | None = None) -> pluggy.PluginManager:
    """A fresh plugin manager with the built-ins and (unless disabled) installed plugins."""
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    for module_name in BUILTIN_PLUGINS:
        module = importlib.import_module(module_name)
        pm.register(module, name=module_name)
    if autoload is None:
        autoload = not os.environ.get(DISABLE_AUTOLOAD_ENV)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        own = ep.dist is not None and ep.dist.name == "judgecp"
        if (own or autoload) and pm.get_plugin(ep.name) is None and not pm.is_blocked(ep.name):
            pm.register(ep.load(), name=ep.name)
    return pm


@lru_cache(maxsize=1)
def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager (built once)."""
    return make_plugin_manager()


def method_classes(pm: pluggy.PluginManager | None = None) -> dict[str, type[ConformalMethod]]:
    """Every registered method class by name, interval methods first."""
    pm = pm or get_plugin_manager()
    found: dict[str, type[ConformalMethod]] = {}
    for hook in (pm.hook.register_interval_methods, pm.hook.register_set_methods):
        for classes in reversed(hook()):  # registration order
            for cls in classes:
                if cls.name in found and found[cls.name] is not cls:
                    raise RuntimeError(
                        f"two plugins register a method named {cls.name!r}: "
                        f"{found[cls.name].__module__} and {cls.__module__}"
                    )
                found[cls.name] = cls
    return found


def is_available(cls: type[ConformalMethod]) -> bool:
    """Whether the method's optional dependencies are importable."""
    return all(importlib.util.find_spec(module) is not None for module, _ in cls.requires)


def missing_dependency(cls: type[ConformalMethod]) -> MissingDependencyError | None:
    for module, extra in cls.requires:
        if importlib.util.find_spec(module) is None:
            return MissingDependencyError(module, extra, f"the {cls.name} method")
    return None


_SPEC = re.compile(r"^\s*([A-Za-z_][\w]*)\s*(?:\((.*)\))?\s*$", re.S)


def parse_method_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Parse ``"name"`` or ``"name(key=value, ...)"`` into a name and keyword arguments.

    Values are Python literals; a bare word is taken as a string, so
    ``lac(probabilities=recalibrated)`` works without quotes.
    """
    match = _SPEC.match(spec)
    if not match:
        raise InputError(f"cannot read method {spec!r}; write NAME or NAME(key=value, ...)")
    name, args = match.group(1), (match.group(2) or "").strip()
    kwargs: dict[str, Any] = {}
    if args:
        try:
            call = ast.parse(f"f({args})", mode="eval").body
        except SyntaxError as exc:
            raise InputError(f"cannot read the arguments of method {spec!r}: {exc.msg}") from exc
        assert isinstance(call, ast.Call)
        if call.args:
            raise InputError(f"method {spec!r}: arguments must be key=value")
        for kw in call.keywords:
            node = kw.value
            if isinstance(node, ast.Name):
                kwargs[str(kw.arg)] = node.id
            elif all(isinstance(n, (ast.Name, ast.BinOp, ast.Add, ast.Load)) for n in ast.walk(node)):
                kwargs[str(kw.arg)] = ast.unparse(node).replace(" ", "")  # words joined by +: features=entropy+margin
            else:
                try:
                    kwargs[str(kw.arg)] = ast.literal_eval(node)
                except ValueError as exc:
                    raise InputError(f"method {spec!r}: {kw.arg} must be a literal") from exc
    return name, kwargs


def canonical_spec(name: str, kwargs: dict[str, Any]) -> str:
    """The spec string used as the method's key in reports."""
    if not kwargs:
        return name
    inner = ", ".join(f"{k}={v}" for k, v in sorted(kwargs.items()))
    return f"{name}({inner})"


def split_method_list(text: str) -> list[str]:
    """Split ``"naive,lac(probabilities=recalibrated, fit_fraction=0.3),aps"`` at top-level commas."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return [s for s in out if s]


def build_method(
    spec: str,
    *,
    alpha: float,
    scale: LikertScale,
    random_state: int | None = None,
    pm: pluggy.PluginManager | None = None,
) -> ConformalMethod:
    """Instantiate a registered method from its spec string."""
    name, kwargs = parse_method_spec(spec)
    classes = method_classes(pm)
    if name not in classes:
        raise unknown("method", name, classes)
    cls = classes[name]
    missing = missing_dependency(cls)
    if missing is not None:
        raise missing
    from judgecp.stats.methods.variants import VARIANT_OPTIONS, make_variant

    options = {k: kwargs.pop(k) for k in VARIANT_OPTIONS if k in kwargs}
    if options:
        return make_variant(cls, kwargs, options, alpha=alpha, scale=scale, random_state=random_state)
    try:
        return cls(alpha, scale=scale, random_state=random_state, **kwargs)
    except TypeError as exc:
        raise InputError(f"method {spec!r}: {exc}") from exc


# -- record formats -------------------------------------------------------------------------


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
        from judgecp.data.tables import table_from_rows

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


def method_parameters(cls: type[ConformalMethod]) -> list[str]:
    """The keyword arguments a method class takes (its and its bases' ``__init__``)."""
    return [p.name for p in init_parameters(cls)
            if p.name not in ("alpha", "scale", "random_state") and p.kind is p.KEYWORD_ONLY]


def check_method_spec(spec: str, *, kind: str = "likert", flag: str = "--methods") -> str:
    """The canonical form of a method spec, or an :class:`InputError` that says what is wrong.

    Checks the name (with "did you mean"), the parameter names against the
    method's, that the method can serve the kind (multiple-choice options
    have no order; no recalibration across items), and that it builds.
    """
    name, kwargs = parse_method_spec(spec)
    classes = method_classes()
    if name not in classes:
        raise InputError(f"{flag}: {unknown('method', name, classes)}")
    cls = classes[name]
    from judgecp.stats.methods.variants import VARIANT_OPTIONS

    allowed = [*method_parameters(cls), *VARIANT_OPTIONS]
    for key in kwargs:
        if key not in allowed:
            raise InputError(
                f"{flag}: {name} has no parameter {key!r}{did_you_mean(key, allowed)}; "
                f"its parameters: {', '.join(allowed) or 'none'}"
            )
    from judgecp.kinds import get_kind

    get_kind(kind).check_method(spec, flag)
    canonical = canonical_spec(name, kwargs)
    build_method(canonical, alpha=0.1, scale=LikertScale())
    return canonical
