"""One document model for the pages jitbench writes (``jitbench report``'s pages,
``jitbench validate``'s report): blocks of inline pieces, rendered as Markdown and as HTML by
walking the same blocks, so no command formats a page of its own. Imports nothing heavy:
tables are pandas frames, built by the commands that import pandas."""

from __future__ import annotations

import base64
import html as _html
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Bold:
    text: str


@dataclass(frozen=True)
class Link:
    """A link to a file next to the page (``href`` relative to the page's folder)."""

    text: str
    href: str


@dataclass(frozen=True)
class PageLink:
    """A link to another page of the report: ``stem.md`` in Markdown, ``stem.html`` in HTML."""

    text: str
    stem: str


Inline = str | Code | Bold | Link | PageLink
Text = Inline | tuple[Inline, ...]


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: Text


@dataclass(frozen=True)
class Bullets:
    items: tuple[Text, ...]


@dataclass(frozen=True, eq=False)
class Table:
    """A frame of display strings; in HTML ``left`` columns align left (numbers right) and
    ``wrap`` ones (long free text) wrap. Markdown reads number-like cells as numbers (aligned
    right, in tabulate's format) unless ``as_written``, which keeps each cell's string."""

    frame: pd.DataFrame
    left: tuple[str, ...] = ()
    wrap: tuple[str, ...] = ()
    as_written: bool = False


@dataclass(frozen=True)
class Image:
    path: str  # relative to the page's folder
    alt: str


@dataclass(frozen=True)
class Details:
    """Blocks behind a click: ``<details>`` in both renderings."""

    summary: str
    blocks: tuple[Block, ...]


Block = Heading | Paragraph | Bullets | Table | Image | Details


@dataclass
class Page:
    title: str
    blocks: list[Block] = field(default_factory=list)


STYLE = (
    "body{font-family:sans-serif;margin:2em auto;max-width:90em;padding:0 1em;line-height:1.4}"
    "table{border-collapse:collapse;font-size:90%;margin:0.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right;white-space:nowrap}"
    "td:first-child,th:first-child{text-align:left}"
    # Headings wrap (a word a line at most), so a wide table fits a 1280-pixel window.
    "th{background:#f3f3f3;white-space:normal;vertical-align:bottom;min-width:4em}"
    "td.wrap{white-space:normal;text-align:left;max-width:60em;font-size:90%}.left{text-align:left}"
    ".scroll{overflow-x:auto}img{max-width:100%}"
    "details{margin:0.5em 0}summary{cursor:pointer;font-weight:bold}"
    "code{background:#f3f3f3;padding:0 2px}"
)


def markdown(page: Page) -> str:
    """The page as Markdown (GitHub's flavour: pipe tables, ``<details>``)."""
    return f"# {page.title}\n\n" + markdown_blocks(page.blocks)


def markdown_blocks(blocks: Iterable[Block]) -> str:
    """Blocks as Markdown, a blank line after each: a part of a page written elsewhere."""
    return "\n".join(line for block in blocks for line in _md_block(block))


def _md_block(block: Block) -> list[str]:
    if isinstance(block, Heading):
        return [f"{'#' * block.level} {block.text}", ""]
    if isinstance(block, Paragraph):
        return [_text(block.text, False), ""]
    if isinstance(block, Bullets):
        return [*(f"- {_text(item, False)}" for item in block.items), ""]
    if isinstance(block, Table):
        cells = block.frame.map(lambda v: " ".join(str(v).split()).replace("|", "\\|"))
        # to_markdown needs tabulate, which asv (the results reader) depends on.
        return [cells.to_markdown(index=False, disable_numparse=block.as_written), ""]
    if isinstance(block, Image):
        return [f"![{block.alt}]({block.path})", ""]
    inner = [line for child in block.blocks for line in _md_block(child)]
    summary = f"<details><summary>{_html.escape(block.summary)}</summary>"
    return [summary, "", *inner, "</details>", ""]


def html(page: Page, folder: Path) -> str:
    """The page as one HTML file; images (relative to ``folder``) are embedded."""
    body = [f"<h1>{_html.escape(page.title)}</h1>"]
    body += [_html_block(block, folder) for block in page.blocks]
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{_html.escape(page.title)}'
        f"</title><style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _html_block(block: Block, folder: Path) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{_html.escape(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        return f"<p>{_text(block.text, True)}</p>"
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{_text(item, True)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Table):
        return _html_table(block)
    if isinstance(block, Image):
        data = base64.b64encode((folder / block.path).read_bytes()).decode("ascii")
        return f'<p><img alt="{_html.escape(block.alt)}" src="data:image/png;base64,{data}"></p>'
    inner = "\n".join(_html_block(child, folder) for child in block.blocks)
    return f"<details><summary>{_html.escape(block.summary)}</summary>\n{inner}\n</details>"


def _html_table(table: Table) -> str:
    columns = list(table.frame.columns)
    left, wrap = ' class="left"', ' class="wrap"'
    classes = [wrap if c in table.wrap else left if c in table.left else "" for c in columns]

    def row(tag: str, values: Iterable[object], classes: list[str]) -> str:
        pairs = zip(classes, values, strict=True)
        cells = "".join(f"<{tag}{c}>{_html.escape(str(v))}</{tag}>" for c, v in pairs)
        return f"<tr>{cells}</tr>"

    # The heading of a left or wrapped column aligns left (every heading wraps: STYLE's th).
    head = row("th", columns, [left if c else "" for c in classes])
    rows = "".join(row("td", r, classes) for r in table.frame.itertuples(index=False))
    return f'<div class="scroll"><table><thead>{head}</thead><tbody>{rows}</tbody></table></div>'


# Each inline piece as Markdown and as HTML, filled in with its fields.
_INLINE = {
    Code: ("`{text}`", "<code>{text}</code>"),
    Bold: ("**{text}**", "<b>{text}</b>"),
    Link: ("[{text}]({href})", '<a href="{href}">{text}</a>'),
    PageLink: ("[{text}]({stem}.md)", '<a href="{stem}.html">{text}</a>'),
}


def _text(text: Text, html: bool) -> str:
    """Inline pieces as Markdown, or as HTML with every field escaped."""
    escape = _html.escape if html else str
    pieces = []
    for piece in text if isinstance(text, tuple) else (text,):
        if isinstance(piece, str):
            pieces.append(escape(piece))
        else:
            fields = {name: escape(value) for name, value in vars(piece).items()}
            pieces.append(_INLINE[type(piece)][html].format(**fields))
    return "".join(pieces)
