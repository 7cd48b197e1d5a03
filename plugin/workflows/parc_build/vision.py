"""PARC's vision variations: reformulations that keep the answer, semantic changes that flip it.

Reformulations (PARC section 2.1, A7.1; the answer key is kept, every image
of the item is transformed the same way, so the order of a comparison is
kept):

* ``VR-B`` blur: Gaussian blur with radius ``blur_fraction`` times the
  image's shorter side (at least ``blur_min_radius`` pixels);
* ``VR-L`` lighting: brightening, ``ImageEnhance.Brightness`` by
  ``brightness_factor``;
* ``VR-R`` rotation by ``rotation_degrees`` (90, counter-clockwise, the
  canvas turned with it: a lossless transpose).

PARC states the transforms, not their strengths; the defaults here are ours
and every build writes them to its manifest.

Semantic changes, two-image (comparative, "Left"/"Right") items only:

* ``VS-S`` swap: the two images change places, the correct side flips;
* ``VS-E`` exchange (supplement A7.3): the image that wins the comparison is
  replaced by one the losing image beats, from a user-supplied exchange map
  (:class:`ExchangeMap`), so the other side wins. See :func:`plan_exchanges`
  for the four steps.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from judgecp.base.errors import InputError, require
from judgecp.base.textfiles import read_text
from judgecp.data.tables import check_readable

VISION_REFORMULATIONS = ("VR-B", "VR-L", "VR-R")
VISION_SEMANTIC = ("VS-S", "VS-E")


@dataclass(frozen=True)
class TransformSettings:
    """Strengths of the vision reformulations (written to the manifest)."""

    blur_fraction: float = 0.02
    blur_min_radius: float = 1.0
    brightness_factor: float = 1.6
    rotation_degrees: Literal[90, 180, 270] = 90

    def __post_init__(self) -> None:
        # Written so that NaN fails every check (a NaN factor would make every VR-L image black).
        if not 0 < self.blur_fraction < 1:
            raise InputError(f"blur_fraction must be in (0, 1), got {self.blur_fraction}")
        if not 0 <= self.blur_min_radius < math.inf:
            raise InputError(f"blur_min_radius must be >= 0 and finite, got {self.blur_min_radius}")
        if not 1 < self.brightness_factor < math.inf:
            raise InputError(f"brightness_factor must be > 1 and finite (VR-L brightens), got {self.brightness_factor}")
        if self.rotation_degrees not in (90, 180, 270):
            raise InputError(f"rotation_degrees must be 90, 180 or 270, got {self.rotation_degrees}")

    def describe(self) -> dict[str, Any]:
        return {
            "VR-B": {
                "operation": "PIL.ImageFilter.GaussianBlur",
                "radius": "max(blur_min_radius, blur_fraction * min(width, height))",
                "blur_fraction": self.blur_fraction,
                "blur_min_radius": self.blur_min_radius,
            },
            "VR-L": {"operation": "PIL.ImageEnhance.Brightness", "factor": self.brightness_factor},
            "VR-R": {
                "operation": "PIL.Image.transpose",
                "degrees_counterclockwise": self.rotation_degrees,
                "expand": True,
            },
            "settings": asdict(self),
        }


def _pil() -> Any:
    return require("PIL.Image", "parc", "PARC's vision variations")


def blur(image: Any, settings: TransformSettings) -> Any:
    from PIL import ImageFilter

    radius = max(settings.blur_min_radius, settings.blur_fraction * min(image.size))
    return image.filter(ImageFilter.GaussianBlur(radius=radius))


def brighten(image: Any, settings: TransformSettings) -> Any:
    from PIL import ImageEnhance

    return ImageEnhance.Brightness(image).enhance(settings.brightness_factor)


def rotate(image: Any, settings: TransformSettings) -> Any:
    pil = _pil()
    op = {90: pil.Transpose.ROTATE_90, 180: pil.Transpose.ROTATE_180, 270: pil.Transpose.ROTATE_270}
    return image.transpose(op[settings.rotation_degrees])


TRANSFORMS = {"VR-B": blur, "VR-L": brighten, "VR-R": rotate}


def transform(variation: str, image: Any, settings: TransformSettings) -> Any:
    """The reformulated copy of one image (RGB, or RGBA / L kept as they are)."""
    if image.mode not in ("RGB", "RGBA", "L"):
        image = image.convert("RGB")
    return TRANSFORMS[variation](image, settings)


# -- Left / Right ----------------------------------------------------------------------------

SIDES = ("left", "right")


def side_letters(options: Mapping[str, str]) -> dict[str, str] | None:
    """``{"left": letter, "right": letter}`` when the options are exactly Left and Right, else None."""
    by_text = {str(v).strip().lower(): k for k, v in options.items()}
    if len(options) != 2 or set(by_text) != set(SIDES):
        return None
    return {side: by_text[side] for side in SIDES}


def flipped(options: Mapping[str, str], correct: Sequence[str]) -> list[str] | None:
    """The other side's letter (VS-S, VS-E); None when the options are not Left/Right or the key is not one side."""
    sides = side_letters(options)
    if sides is None or len(correct) != 1 or correct[0] not in sides.values():
        return None
    return [sides["right"] if correct[0] == sides["left"] else sides["left"]]


def winner_side(options: Mapping[str, str], correct: Sequence[str]) -> int | None:
    """0 (left image wins the comparison) or 1 (right), None when not a Left/Right item."""
    sides = side_letters(options)
    if sides is None or len(correct) != 1 or correct[0] not in sides.values():
        return None
    return 0 if correct[0] == sides["left"] else 1


# -- VS-E: the exchange map and the supplement's procedure -----------------------------------


@dataclass
class ExchangeMap:
    """Which image beats which, per question text (supplement A7.3, step 3's manual annotation).

    ``beats[question][image]`` is the set of images ``image`` wins against for
    that question. Image keys are the originals' image references as written
    in the source (paths relative to it, or absolute), compared as strings
    after normalisation (:func:`image_key`). Built from entries
    ``{"question", "image", "beats": [...]}`` or, derived from attribute
    annotations, ``{"question", "image", "score": x}``: an image beats every
    image of the same question whose score is lower by more than
    ``min_gap``.
    """

    beats: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def from_entries(
        cls, entries: Iterable[Mapping[str, Any]], *, min_gap: float = 0.0, source: str = ""
    ) -> ExchangeMap:
        beats: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        scores: dict[str, dict[str, float]] = defaultdict(dict)
        for n, entry in enumerate(entries, 1):
            if not isinstance(entry, Mapping) or not entry.get("question") or not entry.get("image"):
                raise InputError(f"exchange map entry {n}: needs 'question' and 'image' (and 'beats' or 'score')")
            question = question_key(str(entry["question"]))
            image = image_key(str(entry["image"]))
            if "beats" in entry:
                others = entry["beats"]
                if isinstance(others, str) or not isinstance(others, Iterable):
                    raise InputError(f"exchange map entry {n}: 'beats' must be a list of images")
                beats[question][image].update(image_key(str(o)) for o in others)
            elif "score" in entry:
                try:
                    scores[question][image] = float(entry["score"])
                except (TypeError, ValueError):
                    raise InputError(f"exchange map entry {n}: score {entry['score']!r} is not a number") from None
            else:
                raise InputError(f"exchange map entry {n}: needs 'beats' (a list) or 'score' (a number)")
        for question, by_image in scores.items():
            for image, score in by_image.items():
                beats[question][image].update(o for o, s in by_image.items() if score - s > min_gap)
        return cls({q: {i: set(b) - {i} for i, b in v.items()} for q, v in beats.items()}, source)

    @classmethod
    def read(cls, path: str | Path, *, min_gap: float = 0.0) -> ExchangeMap:
        """A JSON list of entries, a JSONL file of entries, or ``{question: {image: [beaten images]}}``."""
        p = Path(path)
        if not p.exists():
            raise InputError(f"{p}: exchange map not found")
        check_readable(p)
        text = read_text(p, "an exchange map (UTF-8 JSON or JSONL)")
        try:
            data: Any = json.loads(text)
        except ValueError:
            try:
                data = [json.loads(line) for line in text.splitlines() if line.strip()]
            except ValueError as exc:
                raise InputError(f"{p}: neither JSON nor JSONL ({exc})") from None
        if isinstance(data, Mapping):
            entries = [{"question": q, "image": i, "beats": b}
                       for q, by_image in data.items() for i, b in dict(by_image).items()]
        elif isinstance(data, list):
            entries = data
        else:
            raise InputError(f"{p}: an exchange map is a JSON object or a list of entries")
        return cls.from_entries(entries, min_gap=min_gap, source=str(p))

    def digest(self) -> str:
        canon = {q: {i: sorted(b) for i, b in sorted(v.items())} for q, v in sorted(self.beats.items())}
        return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()


def question_key(text: str) -> str:
    """Question texts are compared case- and space-insensitively ("unique question texts", step 1)."""
    return " ".join(text.split()).lower()


def image_key(ref: str) -> str:
    return ref.strip().replace("\\", "/").removeprefix("./")


@dataclass(frozen=True)
class Exchange:
    """One VS-E item: ``side`` (0 left, 1 right) of the pair is replaced by ``image``."""

    side: int
    replaced: str
    image: str
    role: Literal["winner", "loser"]


def _pick(candidates: Iterable[str], token: str) -> str:
    """A deterministic choice among several valid exchanges (sorted, indexed by a hash of the item)."""
    ordered = sorted(candidates)
    index = int(hashlib.sha256(token.encode()).hexdigest(), 16) % len(ordered)
    return ordered[index]


def plan_exchanges(
    items: Sequence[tuple[str, str, Sequence[str], int]],
    exchange_map: ExchangeMap,
    *,
    replace: Literal["winner", "loser", "either"] = "winner",
) -> tuple[dict[str, Exchange], dict[str, str]]:
    """The supplement's VS-E procedure over one dataset's two-image items.

    ``items`` are ``(source_id, question, (left, right) image refs, winning
    side)``. Steps (A7.3): (1) group the items by unique question text and
    keep questions with at least two instances; (2) collect each question's
    losing images; (3) the exchange map says which of those losing images
    each losing image would win against; (4) per item, if its losing image
    beats an annotated image among them, that image replaces the winning one
    (the losing image now wins: the answer flips); else the item is left out.
    With ``replace="loser"`` the roles swap (the losing image is replaced by
    one of the question's winning images that beats the winner);
    ``"either"`` tries the winner first. Among several valid exchanges one
    is chosen deterministically per item.

    Returns the exchanges by source id and the reason for each item left
    out: ``question_single_instance``, ``question_not_in_exchange_map``,
    ``no_valid_exchange``.
    """
    by_question: dict[str, list[tuple[str, Sequence[str], int]]] = defaultdict(list)
    for source_id, question, images, win in items:
        by_question[question_key(question)].append((source_id, [image_key(i) for i in images], win))
    planned: dict[str, Exchange] = {}
    left_out: dict[str, str] = {}
    for question, group in by_question.items():
        if len(group) < 2:
            for source_id, _, _ in group:
                left_out[source_id] = "question_single_instance"
            continue
        annotated = exchange_map.beats.get(question)
        if annotated is None:
            for source_id, _, _ in group:
                left_out[source_id] = "question_not_in_exchange_map"
            continue
        losers = {images[1 - win] for _, images, win in group}
        winners = {images[win] for _, images, win in group}
        for source_id, images, win in group:
            winner, loser = images[win], images[1 - win]
            choice: Exchange | None = None
            if replace in ("winner", "either"):
                candidates = (annotated.get(loser, set()) & losers) - {winner, loser}
                if candidates:
                    choice = Exchange(win, winner, _pick(candidates, source_id), "winner")
            if choice is None and replace in ("loser", "either"):
                candidates = {w for w in winners if winner in annotated.get(w, set())} - {winner, loser}
                if candidates:
                    choice = Exchange(1 - win, loser, _pick(candidates, source_id), "loser")
            if choice is None:
                left_out[source_id] = "no_valid_exchange"
            else:
                planned[source_id] = choice
    return planned, left_out
