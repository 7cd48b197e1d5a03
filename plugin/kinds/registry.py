"""The registries: judge kinds, conformal methods and risk controllers, each built once from the hooks.

Plugins (the built-ins included, :mod:`judgecp.base.plugins`) register classes or objects through
``register_kinds``, ``register_interval_methods`` / ``register_set_methods`` and
``register_risk_controllers``; this module reads the hooks once per set of registered plugins and
looks entries up by name, with the one-line errors that name the flag and the choices there are.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pluggy

from judgecp.base.errors import InputError, MissingDependencyError, did_you_mean, unknown
from judgecp.base.plugins import get_plugin_manager
from judgecp.base.scale import LikertScale
from judgecp.kinds.kind import Kind
from judgecp.stats.conformal import ConformalMethod, init_parameters
from judgecp.stats.methods.spec import canonical_spec, parse_method_spec
from judgecp.stats.methods.variants import VARIANT_OPTIONS, make_variant
from judgecp.stats.saved_state import not_data
from judgecp.stats.selective import RiskController

# -- judge kinds ----------------------------------------------------------------------------------

_KINDS: dict[tuple[int, tuple[int, ...]], dict[str, Kind]] = {}


def kinds(pm: pluggy.PluginManager | None = None) -> dict[str, Kind]:
    """Every registered kind by name, the built-ins first (the ``register_kinds`` hook).

    Built once per plugin manager and set of registered plugins (a plugin registered later, as a test
    does, is seen at the next lookup).
    """
    pm = pm or get_plugin_manager()
    key = (id(pm), tuple(sorted(id(p) for p in pm.get_plugins())))
    found = _KINDS.get(key)
    if found is None:
        found = {}
        for registered in reversed(pm.hook.register_kinds()):  # registration order
            for kind in registered:
                if not isinstance(kind, Kind):
                    raise RuntimeError(f"register_kinds returned {kind!r}, not a judgecp.kinds.Kind")
                if kind.name in found and found[kind.name] is not kind:
                    raise RuntimeError(f"two plugins register a kind named {kind.name!r}")
                found[kind.name] = kind
        _KINDS.clear()
        _KINDS[key] = found
    return found


def get_kind(name: str, *, flag: str = "--kind") -> Kind:
    """The kind called ``name`` (an :class:`InputError` naming the flag and the kinds there are)."""
    registered = kinds()
    if name not in registered:
        raise InputError(f"{flag}: {unknown('kind', name, registered)}")
    return registered[name]


def kind_names() -> list[str]:
    return list(kinds())


def table_kinds() -> list[str]:
    """The kinds that read plain tables and records (``--kind`` of records, calibrate, apply, estimate)."""
    return [name for name, kind in kinds().items() if kind.reads_tables]


def kind_of_shape(shape: str) -> Kind:
    """The kind that reads records of ``shape`` (the first registered; ``parc`` shares ``choice`` with ``mcq``)."""
    for kind in kinds().values():
        if kind.reads_tables and kind.reader.record_shape == shape:
            return kind
    raise InputError(f"no judge kind reads records of shape {shape!r}")


def kinds_of_shape(shape: str) -> list[str]:
    return [name for name, kind in kinds().items() if kind.reads_tables and kind.reader.record_shape == shape]


def record_shapes() -> list[str]:
    """The record shapes some registered kind reads."""
    return sorted({kind.reader.record_shape for kind in kinds().values() if kind.reads_tables})


def calibration_kind(name: str) -> Kind:
    """The kind whose calibrator serves judges of kind ``name`` (an error when none does)."""
    kind = get_kind(name)
    if kind.calibrated_as is None:
        raise InputError(f"judges of kind {name!r} cannot be calibrated (no calibrator serves them)")
    return get_kind(kind.calibrated_as)


def calibration_kinds() -> list[str]:
    """The kinds a saved calibrator can be of (each its own ``calibrated_as``)."""
    return [name for name, kind in kinds().items() if kind.calibrated_as == name]


# -- conformal methods ------------------------------------------------------------------------------

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
    options = {k: kwargs.pop(k) for k in VARIANT_OPTIONS if k in kwargs}
    if options:
        return make_variant(cls, kwargs, options, alpha=alpha, scale=scale, random_state=random_state)
    try:
        return cls(alpha, scale=scale, random_state=random_state, **kwargs)
    except TypeError as exc:
        raise InputError(f"method {spec!r}: {exc}") from exc


# -- record formats -------------------------------------------------------------------------

def method_parameters(cls: type[ConformalMethod]) -> list[str]:
    """The keyword arguments a method class takes (its and its bases' ``__init__``)."""
    return [p.name for p in init_parameters(cls)
            if p.name not in ("alpha", "scale", "random_state") and p.kind is p.KEYWORD_ONLY]


def check_method_spec(spec: str, *, kind: str, flag: str = "--methods") -> str:
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
    allowed = [*method_parameters(cls), *VARIANT_OPTIONS]
    for key in kwargs:
        if key not in allowed:
            raise InputError(
                f"{flag}: {name} has no parameter {key!r}{did_you_mean(key, allowed)}; "
                f"its parameters: {', '.join(allowed) or 'none'}"
            )
    get_kind(kind).study.check_method(spec, flag)
    canonical = canonical_spec(name, kwargs)
    build_method(canonical, alpha=0.1, scale=LikertScale())
    return canonical


def saved_method_class(spec: str) -> tuple[type[ConformalMethod], dict[str, Any]]:
    """The registered class and parameters of a (checked) method spec whose state a calibrator holds."""
    name, params = parse_method_spec(spec)
    classes = method_classes()
    if name not in classes or any(k in params for k in VARIANT_OPTIONS):
        raise not_data(spec)
    return classes[name], params


# -- risk controllers -------------------------------------------------------------------------------


def controller_classes(pm: pluggy.PluginManager | None = None) -> dict[str, type[RiskController]]:
    """Every registered risk controller class by name (the ``register_risk_controllers`` hook)."""
    pm = pm or get_plugin_manager()
    found: dict[str, type[RiskController]] = {}
    for classes in reversed(pm.hook.register_risk_controllers()):
        for cls in classes:
            if cls.name in found and found[cls.name] is not cls:
                raise RuntimeError(f"two plugins register a risk controller named {cls.name!r}")
            found[cls.name] = cls
    return found
