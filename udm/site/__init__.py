"""Site conventions: which generator publishes the manual, its routes, redirects and the one link rule set.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.site.anchors import explicit_anchors as explicit_anchors
    from udm.site.anchors import own_heading_rule as own_heading_rule
    from udm.site.anchors import page_anchors as page_anchors
    from udm.site.anchors import page_named as page_named
    from udm.site.anchors import repeated_from as repeated_from
    from udm.site.detect import NUMBER_PREFIX as NUMBER_PREFIX
    from udm.site.detect import PAGE_SUFFIXES as PAGE_SUFFIXES
    from udm.site.detect import Site as Site
    from udm.site.detect import note_line as note_line
    from udm.site.detect import settings_site as settings_site
    from udm.site.detect import site_for as site_for
    from udm.site.detect import site_notes as site_notes
    from udm.site.gitignore import FolderIgnores as FolderIgnores
    from udm.site.gitignore import gitignore_lines as gitignore_lines
    from udm.site.gitignore import ignore_states as ignore_states
    from udm.site.model import NOT_PUBLISHED as NOT_PUBLISHED
    from udm.site.model import excluded as excluded
    from udm.site.model import exists_within as exists_within
    from udm.site.model import on_pages as on_pages
    from udm.site.model import outside_root as outside_root
    from udm.site.routes import LinkResolver as LinkResolver
    from udm.site.routes import Routes as Routes
    from udm.site.routes import autoref_ids as autoref_ids
    from udm.site.routes import beside_meta as beside_meta
    from udm.site.routes import beside_text as beside_text
    from udm.site.routes import display_target as display_target
    from udm.site.routes import is_reference as is_reference
    from udm.site.routes import no_holder as no_holder
    from udm.site.routes import resolve_links as resolve_links
    from udm.site.routes import route_meta as route_meta

_SURFACE = {
    "NOT_PUBLISHED": "model",
    "LinkResolver": "routes",
    "NUMBER_PREFIX": "detect",
    "PAGE_SUFFIXES": "detect",
    "Routes": "routes",
    "Site": "detect",
    "autoref_ids": "routes",
    "beside_meta": "routes",
    "FolderIgnores": "gitignore",
    "ignore_states": "gitignore",
    "gitignore_lines": "gitignore",
    "beside_text": "routes",
    "display_target": "routes",
    "is_reference": "routes",
    "no_holder": "routes",
    "excluded": "model",
    "exists_within": "model",
    "explicit_anchors": "anchors",
    "own_heading_rule": "anchors",
    "page_anchors": "anchors",
    "page_named": "anchors",
    "repeated_from": "anchors",
    "on_pages": "model",
    "outside_root": "model",
    "resolve_links": "routes",
    "route_meta": "routes",
    "note_line": "detect",
    "settings_site": "detect",
    "site_for": "detect",
    "site_notes": "detect",
}

__all__ = [
    "NOT_PUBLISHED",
    "NUMBER_PREFIX",
    "PAGE_SUFFIXES",
    "FolderIgnores",
    "LinkResolver",
    "Routes",
    "Site",
    "beside_meta",
    "beside_text",
    "display_target",
    "excluded",
    "exists_within",
    "explicit_anchors",
    "gitignore_lines",
    "ignore_states",
    "is_reference",
    "no_holder",
    "note_line",
    "on_pages",
    "outside_root",
    "own_heading_rule",
    "page_anchors",
    "page_named",
    "repeated_from",
    "resolve_links",
    "route_meta",
    "settings_site",
    "site_for",
    "site_notes",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
