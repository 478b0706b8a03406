"""A parsed Document -> the index's rows: sections, blocks, IDs, tasks, modes, tools, config, links.

Lines in the index are 1-based (as editors and `file:line` messages show them); section and block
ranges are `start_line`..`end_line`, both inclusive. The document model underneath is 0-based.
"""

from __future__ import annotations

import itertools
import posixpath
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from udm.index.datarows import Facts, data_rows, is_config_file, json_safe, tool_section_rows
from udm.markdown import Document
from udm.site import on_pages, outside_root

__all__ = [
    "TABLE_COLUMNS",
    "ParseOptions",
    "document_rows",
    "is_config_file",
    "json_safe",
    "parse_options",
    "split_link_target",
]

# Column order of every row table (the NDJSON files the workers write follow it).
TABLE_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "sections": [
        ("file", "VARCHAR"),
        ("idx", "INTEGER"),
        ("level", "INTEGER"),
        ("title", "VARCHAR"),
        ("path", "VARCHAR"),
        ("anchor", "VARCHAR"),
        ("start_line", "INTEGER"),
        ("heading_end", "INTEGER"),
        ("own_end", "INTEGER"),
        ("end_line", "INTEGER"),
        ("parent", "INTEGER"),
        ("ids", "VARCHAR[]"),
        ("start_byte", "BIGINT"),
        ("end_byte", "BIGINT"),
        ("own_end_byte", "BIGINT"),
        ("content", "VARCHAR"),
    ],
    "blocks": [
        ("file", "VARCHAR"),
        ("idx", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
        ("lang", "VARCHAR"),
        ("info", "VARCHAR"),
        ("start_line", "INTEGER"),
        ("end_line", "INTEGER"),
        ("content", "VARCHAR"),
        ("data", "JSON"),
        ("error", "VARCHAR"),
        ("role", "VARCHAR"),  # data | example (see udm.markdown.document.fence_role)
    ],
    "ids": [
        ("id", "VARCHAR"),
        ("kind", "VARCHAR"),
        ("how", "VARCHAR"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
    ],
    "tasks": [
        ("id", "VARCHAR"),
        ("title", "VARCHAR"),
        ("status", "VARCHAR"),
        ("phase", "VARCHAR"),
        ("milestone", "VARCHAR"),
        ("mode", "VARCHAR"),
        ("depends_on", "VARCHAR[]"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
        ("definition", "JSON"),
    ],
    "modes": [
        ("id", "VARCHAR"),
        ("name", "VARCHAR"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
        ("definition", "JSON"),
    ],
    "tools": [
        ("name", "VARCHAR"),
        ("description", "VARCHAR"),
        ("input_schema", "JSON"),
        ("output_schema", "JSON"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
        ("definition", "JSON"),
    ],
    "config": [
        ("key", "VARCHAR"),
        ("value", "JSON"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
    ],
    "problems": [
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("message", "VARCHAR"),
        # The lint rule it is reported under: bad-block, or parser-fallback (udm.markdown.tree).
        ("rule", "VARCHAR"),
    ],
    "links": [
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("text", "VARCHAR"),
        ("target", "VARCHAR"),
        ("kind", "VARCHAR"),
        ("target_file", "VARCHAR"),
        ("fragment", "VARCHAR"),
        ("resolved", "BOOLEAN"),
        # inline, reference, autolink, bare, image, html, jsx, autoref, ref, role, liquid, gitbook
        ("form", "VARCHAR"),
    ],
}


@dataclass(frozen=True, slots=True)
class ParseOptions:
    """What the index's parse needs from the settings (picklable, for the worker processes)."""

    id_patterns: tuple[str, ...]
    data_sections: tuple[str, ...] = ()
    max_file_bytes: int = 4_000_000
    shortcodes: tuple[tuple[str, str], ...] | None = None  # the site's (udm.site.Site.shortcodes)
    # The folders of the site's pages (a MkDocs site's docs_dir, "" the root): Python-Markdown's
    # dialect below holds there only, not in a README beside them.
    pages: tuple[str, ...] = ()
    autorefs: bool = False  # mkdocs-autorefs cross-references are links (udm.site.Site.autorefs)
    indented: tuple[str, ...] = ()  # indented blocks' markers (udm.site.Site.indented)
    roles: bool = False  # a MyST site (udm.site.Site.labels): its roles are links
    # The site whose `{% %}` tags are links: "jekyll" (Liquid destinations), "gitbook" (its blocks), "".
    liquid: str = ""

    def crossing_in(self, rel: str) -> bool:
        """Whether the page `rel` is one of the site's, where cross-references are links."""
        return self.autorefs and on_pages(self.pages, rel)

    def roles_in(self, rel: str) -> bool:
        """Whether the page `rel` is one of a MyST site's: its roles are links, and the targets it names
        before its first heading are kept with its file row."""
        return self.roles and on_pages(self.pages, rel)

    def indented_in(self, rel: str) -> tuple[str, ...]:
        """The markers of the indented blocks whose bodies are Markdown on the page `rel`."""
        return self.indented if self.indented and on_pages(self.pages, rel) else ()

    def liquid_in(self, rel: str) -> str:
        """The site whose `{% %}` tags are links on the page `rel` (one of its pages), else ""."""
        return self.liquid if self.liquid and on_pages(self.pages, rel) else ""


def parse_options(settings: Any) -> ParseOptions:
    """The parse options of these settings (and of the site that publishes the manual)."""
    from udm.site import settings_site

    site = settings_site(settings)
    return ParseOptions(
        tuple(settings.id_patterns),
        tuple(settings.data_sections),
        int(settings.max_file_bytes),
        site.shortcodes,
        tuple(m.folder for m in site.mounts),
        bool(site.autorefs),
        site.indented,
        bool(site.labels),
        site.liquid,
    )


def split_link_target(source_file: str, target: str) -> tuple[str | None, str | None]:
    """(target file relative to the UDM root, fragment) of a link; file None for a same-file anchor."""
    path, _, fragment = target.partition("#")
    fragment = unquote(fragment)
    if not path:
        return None, fragment or None
    path = unquote(path.split("?", 1)[0])
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(source_file), path))
    return joined, fragment or None


def document_rows(doc: Document, *, exists: Any = None) -> dict[str, list[dict[str, Any]]]:
    """Every index row of one document, by table. `exists(relpath)` checks non-Markdown link targets."""
    facts = Facts(doc)
    tasks, modes, tools, config, tool_sections = data_rows(facts)
    return {
        "sections": _section_rows(facts),
        "blocks": _block_rows(facts),
        "ids": _id_rows(facts),
        "tasks": tasks,
        "modes": modes,
        "tools": tools + tool_section_rows(doc, tool_sections),
        "config": config,
        "problems": _problem_rows(doc),
        "links": _link_rows(doc, exists),
    }


def _section_rows(facts: Facts) -> list[dict[str, Any]]:
    """One row per section, with its own text, byte range and the IDs it mentions."""
    doc, path = facts.doc, facts.path
    # Byte offset of every line start (and of the end), so readers can pread a section directly.
    chars = doc.line_starts()
    byte_at = (
        chars if doc.text.isascii() else [0, *itertools.accumulate(len(x.encode("utf-8")) for x in doc.lines)]
    )
    text = doc.text
    mentions: dict[int, list[str]] = {}
    for occ in (*doc.id_defs, *doc.id_refs):
        if occ.section is not None:
            bucket = mentions.setdefault(occ.section, [])
            if occ.id not in bucket:
                bucket.append(occ.id)
    return [
        {
            "file": path,
            "idx": s.index,
            "level": s.level,
            "title": s.title,
            "path": s.path,
            "anchor": s.anchor,
            "start_line": s.start + 1,
            "heading_end": s.heading_end,
            "own_end": s.own_end,
            "end_line": s.end,
            "parent": s.parent,
            "ids": list(s.ids),
            "start_byte": byte_at[s.start],
            "end_byte": byte_at[s.end],
            "own_end_byte": byte_at[s.own_end],
            "content": text[chars[s.start] : chars[s.own_end]],
            "mentions": mentions.get(s.index, []),
        }
        for s in doc.sections
    ]


def _block_rows(facts: Facts) -> list[dict[str, Any]]:
    """One row per fenced block, with its parsed data (examples too, for search)."""
    path, sp = facts.path, facts.sp
    return [
        {
            "file": path,
            "idx": b.index,
            "section": b.section,
            "section_path": sp(b.section),
            "lang": b.lang,
            "info": b.info,
            "start_line": b.start + 1,
            "end_line": b.end,
            "content": b.text,
            "data": facts.safe_data[b.index],
            "error": b.error,
            "role": b.role,
        }
        for b in facts.doc.blocks
    ]


def _id_rows(facts: Facts) -> list[dict[str, Any]]:
    """One row per ID definition, then one per reference."""
    path, sp, doc = facts.path, facts.sp, facts.doc
    rows = [
        {
            "id": occ.id,
            "kind": "def",
            "how": occ.kind,
            "file": path,
            "line": occ.line + 1,
            "section": occ.section,
            "section_path": sp(occ.section),
        }
        for occ in doc.id_defs
    ]
    rows += [
        {
            "id": occ.id,
            "kind": "ref",
            "how": "reference",
            "file": path,
            "line": occ.line + 1,
            "section": occ.section,
            "section_path": sp(occ.section),
        }
        for occ in doc.id_refs
    ]
    return rows


def _problem_rows(doc: Document) -> list[dict[str, Any]]:
    """One row per block or front matter that does not parse, and per parser fallback (messages are
    'path:line: text')."""
    rows: list[dict[str, Any]] = []
    path = doc.path
    for rule, problems in (("bad-block", doc.errors), ("parser-fallback", doc.notes)):
        for problem in problems:
            rest = problem[len(path) + 1 :] if problem.startswith(f"{path}:") else problem
            line_text, _, message = rest.partition(":")
            rows.append(
                {
                    "file": path,
                    "line": int(line_text) if line_text.isdigit() else 1,
                    "message": message.strip() or problem,
                    "rule": rule,
                }
            )
    return rows


def _link_rows(doc: Document, exists: Any) -> list[dict[str, Any]]:
    """One row per link: its target split into file and fragment; non-Markdown targets checked on disk."""
    rows: list[dict[str, Any]] = []
    path = doc.path
    for link in doc.links:
        target_file, fragment = (
            (None, unquote(link.target[1:]) or None)
            if link.kind == "anchor"
            else split_link_target(path, link.target)
            if link.kind == "internal"
            else (None, None)
        )
        resolved: bool | None = None
        if link.kind == "internal" and target_file is not None and outside_root(target_file):
            # A link out of the manual is broken for its readers, whatever this machine holds there.
            resolved = False
        elif link.kind == "internal" and target_file is not None and not target_file.endswith(".md"):
            resolved = bool(exists(target_file)) if exists is not None else None
        rows.append(
            {
                "file": path,
                "line": link.line + 1,
                "section": link.section,
                "text": link.text,
                "target": link.target,
                "kind": link.kind,
                "target_file": target_file,
                "fragment": fragment,
                "resolved": resolved,
                "form": link.form,
            }
        )
    return rows
