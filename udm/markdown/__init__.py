"""The Markdown document model: one CommonMark parse, lines, sections, fences, data blocks, IDs, limits.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.markdown.blockdata import parse_front_matter as parse_front_matter
    from udm.markdown.blockdata import toml_opening as toml_opening
    from udm.markdown.definitions import MYST_SCHEMES as MYST_SCHEMES
    from udm.markdown.definitions import definition_line as definition_line
    from udm.markdown.document import Document as Document
    from udm.markdown.document import load_document as load_document
    from udm.markdown.document import parse_document as parse_document
    from udm.markdown.ids import id_family as id_family
    from udm.markdown.ids import id_matcher as id_matcher
    from udm.markdown.indented import INDENTED_BLOCKS as INDENTED_BLOCKS
    from udm.markdown.indented import TAB_TITLE as TAB_TITLE
    from udm.markdown.lines import split_lines as split_lines
    from udm.markdown.liquid import LiquidTarget as LiquidTarget
    from udm.markdown.liquid import liquid_target as liquid_target
    from udm.markdown.liquid import raw_spans as raw_spans
    from udm.markdown.lookups import find_block as find_block
    from udm.markdown.lookups import find_section as find_section
    from udm.markdown.lookups import section_text as section_text
    from udm.markdown.model import Block as Block
    from udm.markdown.model import Section as Section
    from udm.markdown.outline import slugify as slugify
    from udm.markdown.roles import block_ids as block_ids
    from udm.markdown.scanner import inline_text as inline_text
    from udm.markdown.shortcodes import HugoRef as HugoRef
    from udm.markdown.shortcodes import markdown_shortcodes_alone as markdown_shortcodes_alone
    from udm.markdown.shortcodes import parse_ref as parse_ref
    from udm.markdown.tree import MarkdownParseError as MarkdownParseError
    from udm.markdown.tree import markdown_tree as markdown_tree

_SURFACE = {
    "Block": "model",
    "Document": "document",
    "HugoRef": "shortcodes",
    "INDENTED_BLOCKS": "indented",
    "LiquidTarget": "liquid",
    "MYST_SCHEMES": "definitions",
    "MarkdownParseError": "tree",
    "TAB_TITLE": "indented",
    "Section": "model",
    "block_ids": "roles",
    "definition_line": "definitions",
    "find_block": "lookups",
    "find_section": "lookups",
    "id_family": "ids",
    "id_matcher": "ids",
    "inline_text": "scanner",
    "liquid_target": "liquid",
    "load_document": "document",
    "markdown_shortcodes_alone": "shortcodes",
    "markdown_tree": "tree",
    "parse_document": "document",
    "parse_front_matter": "blockdata",
    "parse_ref": "shortcodes",
    "raw_spans": "liquid",
    "section_text": "lookups",
    "slugify": "outline",
    "split_lines": "lines",
    "toml_opening": "blockdata",
}

__all__ = [
    "INDENTED_BLOCKS",
    "MYST_SCHEMES",
    "TAB_TITLE",
    "Block",
    "Document",
    "HugoRef",
    "LiquidTarget",
    "MarkdownParseError",
    "Section",
    "block_ids",
    "definition_line",
    "find_block",
    "find_section",
    "id_family",
    "id_matcher",
    "inline_text",
    "liquid_target",
    "load_document",
    "markdown_shortcodes_alone",
    "markdown_tree",
    "parse_document",
    "parse_front_matter",
    "parse_ref",
    "raw_spans",
    "section_text",
    "slugify",
    "split_lines",
    "toml_opening",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
