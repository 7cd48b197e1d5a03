"""Fitted state as plain JSON data, and the checked reading every estimator's ``from_state`` uses.

An estimator writes its fitted state with ``state_dict()``: numbers, strings
and lists, floats at full precision (JSON numbers are written with Python's
``repr``, which reads back to the same float), an infinite threshold as the
string ``"inf"`` or ``"-inf"`` (strict JSON has no infinity). It rebuilds
itself with the classmethod ``from_state(...)``, which reads every field
through a :class:`StateReader`: a missing field, a field of the wrong type, a
number out of its range, an array of the wrong length or an unknown field is
refused with one line naming the field (:class:`judgecp.base.errors.InputError`),
before anything is allocated from it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any, NoReturn

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.base.errors import InputError

FloatArray = NDArray[np.float64]
#: Largest predict seed a method draws (``rng.integers(2**63 - 1)``).
SEED_LIMIT = 2**63 - 1
#: Absolute slack of range checks on stored statistics: a probability summed in floating point may
#: exceed 1 (or a binary entropy ln 2) by a few units in the last place.
RANGE_SLACK = 1e-9


def encode_float(value: float) -> float | str:
    """A float as JSON: itself when finite, ``"inf"`` / ``"-inf"`` when infinite (NaN is never state)."""
    number = float(value)
    if math.isnan(number):
        raise ValueError("NaN is not fitted state")
    return number if math.isfinite(number) else ("inf" if number > 0 else "-inf")


def encode_floats(values: ArrayLike) -> list[float]:
    """Finite floats as a JSON list, full precision (sorted by the caller where order does not matter)."""
    array = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(array).all():
        raise ValueError("stored arrays hold finite numbers only")
    out: list[float] = array.tolist()
    return out


def _describe(value: Any) -> str:
    text = repr(value) if isinstance(value, (int, float, str, bool)) or value is None else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _as_float(value: int | float) -> float:
    """``float(value)``; an integer too large for a float is infinite (then refused as not finite)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


class StateReader:
    """Typed, checked access to one JSON object of a saved state; errors name the field by its path.

    ``where`` is the object's path (``"cal.json: state.method"``, or
    ``"cal.json:"`` for a file's top level); every error reads
    ``"<where>.<field>: <what is wrong>"``.
    """

    def __init__(self, obj: Any, where: str) -> None:
        if not isinstance(obj, Mapping):
            raise InputError(f"{where}: expected an object, found {_describe(obj)}")
        self.obj = obj
        self.where = where
        self.read: set[str] = set()

    def path(self, key: str) -> str:
        """The field's path: ``where.key``, or ``where key`` after a file name (``"cal.json: alpha"``)."""
        return f"{self.where} {key}" if self.where.endswith(":") else f"{self.where}.{key}"

    def fail(self, key: str, problem: str) -> NoReturn:
        raise InputError(f"{self.path(key)}: {problem}")

    def has(self, key: str) -> bool:
        return key in self.obj

    def get(self, key: str) -> Any:
        if key not in self.obj:
            self.fail(key, "missing")
        self.read.add(key)
        return self.obj[key]

    def finish(self) -> None:
        """Refuse any field that was not read (an unknown field: a typo, or an edit)."""
        extra = sorted(str(k) for k in self.obj if k not in self.read)
        if extra:
            self.fail(extra[0], f"unknown field (the fields here: {', '.join(sorted(self.read))})")

    def child(self, key: str) -> StateReader:
        return StateReader(self.get(key), self.path(key))

    def text(self, key: str, choices: Collection[str] | None = None) -> str:
        value = self.get(key)
        if not isinstance(value, str):
            self.fail(key, f"expected a string, found {_describe(value)}")
        if choices is not None and value not in choices:
            self.fail(key, f"{value!r} is not one of {', '.join(sorted(choices))}")
        return value

    def optional_text(self, key: str) -> str | None:
        return None if self.obj.get(key) is None else self.text(key)

    def flag(self, key: str) -> bool:
        value = self.get(key)
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, found {_describe(value)}")
        return value

    def number(self, key: str, *, low: float = -math.inf, high: float = math.inf, infinite: bool = False,
               open_interval: bool = False) -> float:
        """A number in ``[low, high]`` (``(low, high)`` with ``open_interval``); ``"inf"``/``"-inf"`` when
        ``infinite``."""
        value = self.get(key)
        if infinite and value in ("inf", "-inf"):
            return float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"expected a number, found {_describe(value)}")
        number = _as_float(value)
        if not math.isfinite(number):
            self.fail(key, f"{value!r} is not a finite number")
        inside = low < number < high if open_interval else low <= number <= high
        if not inside:
            left, right = ("(", ")") if open_interval else ("[", "]")
            self.fail(key, f"{value!r} is not in {left}{low:g}, {high:g}{right}")
        return number

    def integer(self, key: str, *, low: int, high: int) -> int:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"expected an integer, found {_describe(value)}")
        if not low <= value <= high:
            self.fail(key, f"{value} is not in [{low}, {high}]")
        return value

    def floats(self, key: str, *, size: int | None = None, low: float = -math.inf, high: float = math.inf,
               ascending: bool = False) -> FloatArray:
        """A list of finite numbers in ``[low, high]`` (``size`` of them, when given)."""
        value = self.get(key)
        if not isinstance(value, list):
            self.fail(key, f"expected a list of numbers, found {_describe(value)}")
        if size is not None and len(value) != size:
            self.fail(key, f"{len(value)} values, expected {size}")
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
            bad = next(v for v in value if isinstance(v, bool) or not isinstance(v, (int, float)))
            self.fail(key, f"expected numbers, found {_describe(bad)}")
        array = np.asarray([_as_float(v) for v in value], dtype=np.float64)
        if not np.isfinite(array).all():
            self.fail(key, "holds a value that is not a finite number")
        if array.size and (array.min() < low or array.max() > high):
            bad = float(array[(array < low) | (array > high)][0])
            self.fail(key, f"{bad!r} is not in [{low:g}, {high:g}]")
        if ascending and (np.diff(array) < 0).any():
            self.fail(key, "values are not in ascending order")
        return array

    def matrix(self, key: str, *, rows: int, columns: int) -> FloatArray:
        """A ``rows x columns`` list of lists of finite numbers."""
        value = self.get(key)
        if not isinstance(value, list) or len(value) != rows:
            found = f"{len(value)} rows" if isinstance(value, list) else _describe(value)
            self.fail(key, f"expected {rows} rows of {columns} numbers, found {found}")
        if any(not isinstance(row, list) or len(row) != columns for row in value):
            self.fail(key, f"expected {rows} rows of {columns} numbers")
        flat = [v for row in value for v in row]
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in flat):
            self.fail(key, "expected numbers")
        array = np.asarray([_as_float(v) for v in flat], dtype=np.float64).reshape(rows, columns)
        if not np.isfinite(array).all():
            self.fail(key, "holds a value that is not a finite number")
        return array

    def texts(self, key: str) -> list[str]:
        value = self.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(key, f"expected a list of strings, found {_describe(value)}")
        return list(value)


def check_threshold(reader: StateReader, key: str, stored: float, recomputed: float, *, tolerance: float = 0.0) -> None:
    """The stored threshold must be the one its stored calibration data give: the same bits, or within a relative
    ``tolerance`` where the threshold is a formula's value (a logarithm may differ in its last bit between builds)."""
    close = math.isfinite(stored) and math.isfinite(recomputed) and (
        abs(stored - recomputed) <= tolerance * max(1.0, abs(recomputed)))
    if stored != recomputed and not close:
        reader.fail(key, f"{stored!r} is not the threshold the stored calibration data give ({recomputed!r}); "
                    "the file was edited or corrupted")


#: The methods whose fitted state is numbers, for messages (each with the judge's own probabilities).
SAVEABLE_METHODS = "naive, lac, aps, raps, margin, ordinal_aps, ordinal_set, lvd"
#: Largest integer seed stored (``numpy.random.default_rng`` takes any non-negative integer).
RANDOM_STATE_LIMIT = 2**128


def not_data(name: str) -> InputError:
    return InputError(
        f"{name}: its fitted state is a model, which a calibrator does not hold as data; calibrate a method "
        f"whose state is numbers ({SAVEABLE_METHODS}) with the judge's own probabilities"
    )
