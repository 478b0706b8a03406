"""The Markdown document model: one CommonMark parse, lines, sections, fences, data blocks, IDs, limits.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.markdown.blockdata import parse_front_matter as parse_front_matter
    from udm.markdown.datalimits import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
    from udm.markdown.datalimits import DEFAULT_MAX_DEPTH as DEFAULT_MAX_DEPTH
    from udm.markdown.datalimits import DEPTH_CEILING as DEPTH_CEILING
    from udm.markdown.datalimits import DataLimitError as DataLimitError
    from udm.markdown.datalimits import DataLimits as DataLimits
    from udm.markdown.datalimits import apply_settings as apply_settings
    from udm.markdown.datalimits import check_json as check_json
    from udm.markdown.datalimits import check_text as check_text
    from udm.markdown.datalimits import check_yaml as check_yaml
    from udm.markdown.datalimits import current_limits as current_limits
    from udm.markdown.datalimits import load_json as load_json
    from udm.markdown.definitions import definition_line as definition_line
    from udm.markdown.document import Document as Document
    from udm.markdown.document import load_document as load_document
    from udm.markdown.document import parse_document as parse_document
    from udm.markdown.ids import id_family as id_family
    from udm.markdown.ids import id_matcher as id_matcher
    from udm.markdown.lines import split_lines as split_lines
    from udm.markdown.lookups import find_block as find_block
    from udm.markdown.lookups import find_section as find_section
    from udm.markdown.lookups import section_text as section_text
    from udm.markdown.model import Block as Block
    from udm.markdown.model import Section as Section
    from udm.markdown.outline import slugify as slugify
    from udm.markdown.roles import block_ids as block_ids

_SURFACE = {
    "Block": "model",
    "DEFAULT_MAX_BYTES": "datalimits",
    "DEFAULT_MAX_DEPTH": "datalimits",
    "DEPTH_CEILING": "datalimits",
    "DataLimitError": "datalimits",
    "DataLimits": "datalimits",
    "Document": "document",
    "Section": "model",
    "apply_settings": "datalimits",
    "block_ids": "roles",
    "check_json": "datalimits",
    "check_text": "datalimits",
    "check_yaml": "datalimits",
    "current_limits": "datalimits",
    "definition_line": "definitions",
    "find_block": "lookups",
    "find_section": "lookups",
    "id_family": "ids",
    "id_matcher": "ids",
    "load_document": "document",
    "load_json": "datalimits",
    "parse_document": "document",
    "parse_front_matter": "blockdata",
    "section_text": "lookups",
    "slugify": "outline",
    "split_lines": "lines",
}

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "DEPTH_CEILING",
    "Block",
    "DataLimitError",
    "DataLimits",
    "Document",
    "Section",
    "apply_settings",
    "block_ids",
    "check_json",
    "check_text",
    "check_yaml",
    "current_limits",
    "definition_line",
    "find_block",
    "find_section",
    "id_family",
    "id_matcher",
    "load_document",
    "load_json",
    "parse_document",
    "parse_front_matter",
    "section_text",
    "slugify",
    "split_lines",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
