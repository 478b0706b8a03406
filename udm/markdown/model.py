"""The document model's records: sections, fenced blocks, links and ID occurrences (0-based lines)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from udm.markdown.blockdata import DATA_LANGS
from udm.markdown.blockdata import parse_data as _parse_data

__all__ = ["Block", "IdOccurrence", "Link", "Section"]


@dataclass(frozen=True, slots=True)
class Section:
    """A heading and the lines up to the next heading of the same or a higher level."""

    index: int
    level: int
    title: str
    heading_start: int
    heading_end: int
    start: int
    end: int
    own_end: int
    path: str
    anchor: str
    parent: int | None
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Block:
    """A fenced code block; `data`/`error` hold its parsed YAML or JSON, worked out on first use."""

    index: int
    lang: str
    info: str
    start: int
    end: int
    content_start: int
    content_end: int
    fence: str
    indent: int
    section: int | None
    text: str
    file: str = field(default="", repr=False)
    # 'data' (the manual's data: IDs, errors) or 'example' (illustration: parsed best-effort, never an error).
    role: str = "data"
    # Parsed data, error and defined IDs, filled on first use: most callers never read most blocks.
    _lazy: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def data(self) -> Any:
        """The parsed value of a YAML/JSON/verify block (None for other languages or on error)."""
        return self._parsed()[0]

    @property
    def error(self) -> str | None:
        """'path:line: message' when a data block does not parse, else None (examples are never errors)."""
        return self._parsed()[1] if self.role == "data" else None

    def _parsed(self) -> tuple[Any, str | None]:
        found = self._lazy.get("parsed")
        if found is None:
            found = (None, None)
            if self.lang in DATA_LANGS:
                found = _parse_data(self.lang, self.text, self.file, self.content_start)
            self._lazy["parsed"] = found
        return found


@dataclass(frozen=True, slots=True)
class Link:
    """A link a reader can click; kind is 'internal', 'external' or 'anchor'.

    form says how it is written: 'inline' `[t](x)`, 'reference' `[t][r]` / `[t][]` / `[t]`,
    'autolink' `<https://x>`, 'bare' (a GFM extended autolink: `www.x.org`, `https://x`),
    'image' `![alt](x)`, 'html' (href/src of an HTML tag), 'jsx' (href/src of an MDX/JSX tag),
    'ref' (a Hugo `{{< ref "x" >}}` or `relref` shortcode; its target is the shortcode as written),
    'embed' (a link whose title holds Docsify's `:include`: `[x](part.md ':include')` embeds the file),
    'ignore' (one whose title holds Docsify's `:ignore`: the link is left as written),
    'autoref' (a mkdocs-autorefs cross-reference: `[t][id]` no definition defines, target `[id]`; or
    `[t][]`, target `[t][]`).
    """

    line: int
    text: str
    target: str
    kind: str
    section: int | None
    form: str = "inline"


@dataclass(frozen=True, slots=True)
class IdOccurrence:
    """One place an ID appears; kind is 'heading', 'field', 'block', 'front_matter' or 'reference'."""

    id: str
    line: int
    section: int | None
    kind: str
