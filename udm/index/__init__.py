"""The DuckDB index of the manual: schema, refresh, queries, search, read-only SQL, lint and link checks.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.index.core import UdmIndex as UdmIndex
    from udm.index.core import read_fresh as read_fresh
    from udm.index.links import check_links as check_links
    from udm.index.lint_format import FORMATS as FORMATS
    from udm.index.lint_format import render as render
    from udm.index.lint_rules import LintConfig as LintConfig
    from udm.index.lint_rules import exit_code as exit_code
    from udm.index.lint_rules import lint as lint
    from udm.index.lookup import MARKDOWN_SUFFIXES as MARKDOWN_SUFFIXES
    from udm.index.lookup import lookup_definitions as lookup_definitions
    from udm.index.lookup import manual_pages as manual_pages
    from udm.index.lookup import scan_markdown as scan_markdown
    from udm.index.parse import PageRead as PageRead
    from udm.index.parse import manual_documents as manual_documents
    from udm.index.parse import read_page as read_page
    from udm.index.parse import skip_reason as skip_reason
    from udm.index.query import UdmQuery as UdmQuery
    from udm.index.query import definition_places as definition_places
    from udm.index.query import get_query as get_query
    from udm.index.sql import SqlLimits as SqlLimits
    from udm.index.sql import SqlMemoryError as SqlMemoryError
    from udm.index.sql import SqlRefusedError as SqlRefusedError
    from udm.index.sql import SqlTimeoutError as SqlTimeoutError
    from udm.index.sql import run_readonly_sql as run_readonly_sql

_SURFACE = {
    "FORMATS": "lint_format",
    "LintConfig": "lint_rules",
    "MARKDOWN_SUFFIXES": "lookup",
    "PageRead": "parse",
    "SqlLimits": "sql",
    "SqlMemoryError": "sql",
    "SqlRefusedError": "sql",
    "SqlTimeoutError": "sql",
    "UdmIndex": "core",
    "UdmQuery": "query",
    "check_links": "links",
    "definition_places": "query",
    "exit_code": "lint_rules",
    "get_query": "query",
    "lint": "lint_rules",
    "lookup_definitions": "lookup",
    "manual_documents": "parse",
    "manual_pages": "lookup",
    "read_fresh": "core",
    "read_page": "parse",
    "render": "lint_format",
    "run_readonly_sql": "sql",
    "scan_markdown": "lookup",
    "skip_reason": "parse",
}

__all__ = [
    "FORMATS",
    "MARKDOWN_SUFFIXES",
    "LintConfig",
    "PageRead",
    "SqlLimits",
    "SqlMemoryError",
    "SqlRefusedError",
    "SqlTimeoutError",
    "UdmIndex",
    "UdmQuery",
    "check_links",
    "definition_places",
    "exit_code",
    "get_query",
    "lint",
    "lookup_definitions",
    "manual_documents",
    "manual_pages",
    "read_fresh",
    "read_page",
    "render",
    "run_readonly_sql",
    "scan_markdown",
    "skip_reason",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
