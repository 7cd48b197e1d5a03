"""The report's documents: one list of blocks rendered as Markdown and as self-contained HTML.

Figures are written as PNG and SVG next to ``report.md`` (``figures/<id>.png``,
``figures/<id>.svg``) and embedded in ``report.html`` as base64 PNG, so the
HTML page is one file with no external request and no script. Output is
deterministic: no dates, PNG and SVG metadata fixed, ``svg.hashsalt`` set.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.present.console import fmt
from judgecp.present.figures import Plot
from judgecp.present.runs import Run

#: Fixed matplotlib settings for byte-stable output (text is drawn in matplotlib's bundled DejaVu Sans).
RC: dict[str, Any] = {"svg.hashsalt": "judgecp", "svg.fonttype": "path"}
PNG_DPI = 110


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class Document:
    """Blocks in order: ``("h1"|"h2"|"h3"|"p", text)``, ``("table", Table)``, ``("figure", Plot)``, ``("list",
    [..])``."""

    blocks: list[tuple[str, Any]] = field(default_factory=list)

    def add(self, kind: str, value: Any) -> None:
        self.blocks.append((kind, value))


def figure_bytes(plot: Plot, fmt: str) -> bytes:
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context(RC):  # type: ignore[arg-type]
        metadata: dict[str, Any] = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
        plot.figure.savefig(buf, format=fmt, dpi=PNG_DPI, metadata=metadata)
    return buf.getvalue()


def write_figures(doc: Document, out: Path) -> dict[str, bytes]:
    """Every figure as ``figures/<id>.png`` and ``.svg``; returns the PNG bytes by id (for the HTML)."""
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    pngs: dict[str, bytes] = {}
    for kind, value in doc.blocks:
        if kind != "figure":
            continue
        png = figure_bytes(value, "png")
        (figdir / f"{value.id}.png").write_bytes(png)
        (figdir / f"{value.id}.svg").write_bytes(figure_bytes(value, "svg"))
        pngs[value.id] = png
    return pngs


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(doc: Document) -> str:
    lines: list[str] = []
    for kind, value in doc.blocks:
        if kind in ("h1", "h2", "h3"):
            lines += ["#" * int(kind[1]) + " " + value, ""]
        elif kind == "p":
            lines += [value, ""]
        elif kind == "list":
            lines += [f"- {item}" for item in value] + [""]
        elif kind == "table":
            if value.caption:
                lines += [value.caption, ""]
            lines.append("| " + " | ".join(_md_cell(h) for h in value.header) + " |")
            lines.append("|" + "|".join("---" for _ in value.header) + "|")
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in value.rows]
            lines.append("")
        elif kind == "figure":
            lines += [f"![{value.title}](figures/{value.id}.png)", "", f"*{value.caption}* "
                      f"([SVG](figures/{value.id}.svg))", ""]
    return "\n".join(lines).rstrip() + "\n"


CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.88em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
code { background: #f6f6f6; padding: 0 0.2em; }
"""


def _inline(text: str) -> str:
    """Escape, then turn Markdown `code` spans into <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


NUMERIC = re.compile(r"^[–+-]?[\d.]+( / [\d.]+)?$|^–$")


def _td(text: str) -> str:
    cls = ' class="num"' if NUMERIC.match(text) else ""
    return f"<td{cls}>{_inline(text)}</td>"


def to_html(doc: Document, pngs: dict[str, bytes], title: str) -> str:
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{html.escape(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>"]
    for kind, value in doc.blocks:
        if kind in ("h1", "h2", "h3"):
            out.append(f"<{kind}>{_inline(value)}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{_inline(value)}</p>")
        elif kind == "list":
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in value) + "</ul>")
        elif kind == "table":
            cap = f"<caption>{_inline(value.caption)}</caption>" if value.caption else ""
            head = "".join(f"<th>{_inline(h)}</th>" for h in value.header)
            body = "".join("<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in value.rows)
            out.append(f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif kind == "figure":
            data = base64.b64encode(pngs[value.id]).decode("ascii")
            out.append(f'<figure id="{value.id}"><img alt="{html.escape(value.title)}" '
                       f'src="data:image/png;base64,{data}">'
                       f"<figcaption>{_inline(value.caption)}</figcaption></figure>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def report_cell(value: Any, digits: int = 3) -> str:
    """A report cell: the text table's, with an en dash for a missing value."""
    return fmt(value, digits, missing="–")


def choose_focus(runs: Sequence[Run], focus: str | None, section: str = "methods") -> str:
    names = [list(r.report.get(section, {})) for r in runs]
    if focus is not None:
        if not all(focus in n for n in names):
            raise InputError(f"--method {focus!r} is not in every {runs[0].kind} report ({', '.join(names[0])})")
        return focus
    common = [m for m in names[0] if all(m in n for n in names[1:])]
    return common[0] if common else (names[0][0] if names[0] else "")
