"""Lookups over the index: IDs, sections, tasks, modes, tools, config keys, references and search.

Every public call first makes the index fresh (`UdmIndex.ensure_fresh`), so answers always reflect
the files on disk. Hot lookups keep small in-process caches keyed by the index generation.
"""

from __future__ import annotations

import json
import os
import posixpath
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udm.config import Settings
from udm.errors import AmbiguousTargetError, DocumentError, TargetNotFoundError
from udm.index.core import UdmIndex
from udm.index.parse import decode_page
from udm.index.search import SearchHit, SearchIndex
from udm.markdown import Document, Section, find_section, split_lines

__all__ = ["Definition", "Reference", "UdmQuery", "get_query"]


@dataclass(frozen=True, slots=True)
class Definition:
    """Where an ID is defined."""

    id: str
    file: str
    line: int
    how: str
    section: int | None
    section_path: str | None

    def location(self) -> str:
        """'file:line'."""
        return f"{self.file}:{self.line}"


def definition_places(defs: list[Definition]) -> list[Definition]:
    """One definition per place (file and section), in order; the place where an ID is defined.

    Front matter names the document it heads, so a front-matter definition in a file that also
    defines the ID elsewhere (its title heading, say) is the same place, not a second one.
    """
    elsewhere = {d.file for d in defs if d.how != "front_matter"}
    out: dict[tuple[str, int | None], Definition] = {}
    for d in defs:
        if d.how == "front_matter" and d.file in elsewhere:
            continue
        out.setdefault((d.file, d.section), d)
    return list(out.values())


@dataclass(frozen=True, slots=True)
class Reference:
    """One mention of an ID that is not its definition."""

    id: str
    file: str
    line: int
    section: int | None
    section_path: str | None
    text: str


_QUERIES: dict[tuple[str, str], UdmQuery] = {}
# After this many distinct files, a process loads all section metadata at once.
_LOAD_ALL_AFTER = 8
_QUERIES_LOCK = threading.Lock()


def get_query(settings: Settings) -> UdmQuery:
    """The process-wide query object for these settings' UDM root and state folder."""
    key = (str(settings.udm_root), str(settings.state_path))
    with _QUERIES_LOCK:
        found = _QUERIES.get(key)
        if found is None or _shaping(found.settings) != _shaping(settings):
            found = UdmQuery(settings)
            _QUERIES[key] = found
        return found


def _shaping(settings: Settings) -> tuple[object, ...]:
    """The settings that change what the index holds or how its links resolve."""
    return (tuple(settings.id_patterns), settings.site_generator, settings.site_base_path)


class UdmQuery:
    """Query API over one UDM index."""

    def __init__(self, settings: Settings, index: UdmIndex | None = None) -> None:
        self.settings = settings
        self.index = index or UdmIndex(settings)
        self._lock = threading.RLock()
        self._gen = -2
        self._defs: dict[str, list[Definition]] | None = None
        self._docs: dict[str, Document] = {}
        self._bytes: dict[str, list[tuple[int, int, int]]] = {}
        self._search: SearchIndex | None = None
        self._all_sections: dict[str, list[tuple[Any, ...]]] | None = None
        self._files_asked = 0
        # After a small refresh the big caches are patched for its files on next use, not reloaded
        # (reloading 64k definitions takes ~0.8 s on the 100 MB corpus).
        self._def_files: dict[str, set[str]] = {}
        self._stale_defs: set[str] = set()
        self._stale_sections: set[str] = set()

    # ----- freshness and caches -----------------------------------------------------------------

    def fresh(self) -> None:
        """Re-index what changed on disk and drop caches of an older generation."""
        with self._lock:
            stats = self.index.ensure_fresh()
            if self.index.generation == self._gen:
                return
            changed = stats.changed_files if stats is not None else None
            if (
                changed is not None
                and self._gen >= 0
                and stats is not None
                and stats.generation == self._gen + 1
            ):
                # Our own small refresh took the index from our generation to the next: only its
                # files' entries are stale.
                self._gen = stats.generation
                for path in changed:
                    self._docs.pop(path, None)
                    self._bytes.pop(path, None)
                if self._defs is not None:
                    self._stale_defs.update(changed)
                if self._all_sections is not None:
                    self._stale_sections.update(changed)
                self._search = None
                return
            self._gen = self.index.generation
            self._defs = None
            self._def_files = {}
            self._stale_defs.clear()
            self._stale_sections.clear()
            self._docs.clear()
            self._bytes.clear()
            self._search = None
            self._all_sections = None
            self._files_asked = 0

    def _definitions(self) -> dict[str, list[Definition]]:
        if self._defs is not None and self._stale_defs:
            self._patch_definitions()
        if self._defs is None:
            with self.index.connect() as con:
                rows = con.execute(
                    "SELECT id, file, line, how, section, section_path FROM ids WHERE kind = 'def' "
                    "ORDER BY file, line"
                ).fetchall()
            defs: dict[str, list[Definition]] = {}
            by_file: dict[str, set[str]] = {}
            for r in rows:
                defs.setdefault(r[0], []).append(Definition(*r))
                by_file.setdefault(r[1], set()).add(r[0])
            self._defs = defs
            self._def_files = by_file
        return self._defs

    def _patch_definitions(self) -> None:
        """Replace the cached definitions of the files a small refresh changed."""
        defs = self._defs
        assert defs is not None
        files = sorted(self._stale_defs)
        self._stale_defs.clear()
        touched: set[str] = set()
        for path in files:
            for ident in self._def_files.pop(path, ()):
                kept = [d for d in defs.get(ident, ()) if d.file != path]
                if kept:
                    defs[ident] = kept
                else:
                    defs.pop(ident, None)
        with self.index.connect() as con:
            for path in files:
                for r in con.execute(
                    "SELECT id, file, line, how, section, section_path FROM ids WHERE kind = 'def' "
                    "AND file = ? ORDER BY line",
                    [path],
                ).fetchall():
                    defs.setdefault(r[0], []).append(Definition(*r))
                    self._def_files.setdefault(path, set()).add(r[0])
                    touched.add(r[0])
        for ident in touched:
            defs[ident].sort(key=lambda d: (d.file, d.line))

    # ----- files and sections ------------------------------------------------------------------

    def files(self) -> list[str]:
        """Every indexed file."""
        self.fresh()
        with self.index.connect() as con:
            return [r[0] for r in con.execute("SELECT path FROM files ORDER BY path").fetchall()]

    def resolve_file(self, given: str) -> str:
        """An indexed file for a user-given path ('/docs/udm/05-roadmap.md', '05-Roadmap.md' ...)."""
        self.fresh()
        text = given.strip().replace("\\", "/")
        if not text:
            raise TargetNotFoundError("empty file path")
        files = self._file_set()
        parts = text.lstrip("/").split("/")
        # The path as given, then without leading folders that are the root's own ('/docs/udm/x.md' with
        # the root at docs/udm -> 'x.md'). Any other folder is part of the path: 'ja/guides/x.mdx' never
        # falls back to another locale's 'en/guides/x.mdx'.
        root_parts = [p for p in self.settings.udm_root.as_posix().split("/") if p]
        candidates = [text.lstrip("/")] + [
            "/".join(parts[k:]) for k in range(1, len(parts)) if root_parts[-k:] == parts[:k]
        ]
        for cand in candidates:
            norm = posixpath.normpath(cand)
            if norm in files:
                return norm
        for cand in candidates:
            norm = posixpath.normpath(cand)
            found = [f for f in files if f.casefold() == norm.casefold()]
            if len(found) == 1:
                return found[0]
            tail = [f for f in files if f.casefold().endswith("/" + norm.casefold())]
            if len(tail) == 1:
                return tail[0]
            if len(tail) > 1:
                raise AmbiguousTargetError(f"'{given}' matches {len(tail)} files", sorted(tail))
        name = "/" + parts[-1].casefold()
        same = sorted(f for f in files if f.casefold().endswith(name))[:5]
        hint = f" (files of that name: {', '.join(same)})" if same else ""
        raise TargetNotFoundError(f"no file '{given}' under the UDM root{hint}")

    def _file_set(self) -> set[str]:
        if self.index._known is not None:
            return set(self.index._known)
        with self.index.connect() as con:
            return {r[0] for r in con.execute("SELECT path FROM files").fetchall()}

    def document(self, relpath: str) -> Document:
        """A file's sections from the index; `text`/`lines` are read from disk on first use."""
        self.fresh()
        with self._lock:
            doc = self._docs.get(relpath)
            if doc is not None:
                return doc
            rows = self._section_rows(relpath)
            if not rows:
                if relpath not in self._file_set():
                    raise TargetNotFoundError(f"no file '{relpath}' under the UDM root")
                self.read_text(relpath)  # a file without sections may be one that does not decode
            sections = [
                Section(
                    index=r[0],
                    level=r[1],
                    title=r[2],
                    heading_start=r[3] - 1,
                    heading_end=r[4],
                    start=r[3] - 1,
                    end=r[6],
                    own_end=r[5],
                    path=r[7],
                    anchor=r[8],
                    parent=r[9],
                    ids=tuple(r[10] or ()),
                )
                for r in rows
            ]
            doc = Document(
                path=relpath,
                text="",
                lines=[],
                sections=sections,
                blocks=[],
                front_matter=None,
                front_matter_range=None,
                links=[],
                id_defs=[],
                id_refs=[],
                errors=[],
                content_hash="",
                parser="index",
            )
            if len(self._docs) > 4096:
                self._docs.clear()
                self._bytes.clear()
            self._docs[relpath] = doc
            self._bytes[relpath] = [(r[11], r[12], r[13]) for r in rows]
            return doc

    def read_text(self, relpath: str) -> str:
        """A file's whole text (UTF-8, strict: otherwise the index's reason, 'not valid UTF-8 (byte N)')."""
        try:
            raw = (self.settings.udm_root / relpath).read_bytes()
        except FileNotFoundError as exc:
            raise TargetNotFoundError(f"no file '{relpath}' under the UDM root") from exc
        except OSError as exc:
            raise DocumentError(f"{relpath}: cannot read: {exc}") from exc
        text, error = decode_page(relpath, raw)
        if text is None:
            raise DocumentError(error or f"{relpath}: not valid UTF-8")
        return text

    def markdown(self, doc: Document, section: Section | None, *, own: bool = False) -> str:
        """The exact text of a section (or the whole file), read by byte range from disk."""
        if section is None:
            return self.read_text(doc.path)
        offsets = self._bytes.get(doc.path)
        if not offsets or section.index >= len(offsets):
            text = self.read_text(doc.path)
            return "".join(split_lines(text)[section.start : section.own_end if own else section.end])
        start, end, own_end = offsets[section.index]
        stop = own_end if own else end
        try:
            fd = os.open(self.settings.udm_root / doc.path, os.O_RDONLY)
            try:
                data = os.pread(fd, stop - start, start)
            finally:
                os.close(fd)
            return data.decode("utf-8")
        except FileNotFoundError as exc:
            raise TargetNotFoundError(f"no file '{doc.path}' under the UDM root") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise DocumentError(f"{doc.path}: cannot read: {exc}") from exc

    def _section_rows(self, relpath: str) -> list[tuple[Any, ...]]:
        cols = (
            "idx, level, title, start_line, heading_end, own_end, end_line, path, anchor, parent, ids, "
            "start_byte, end_byte, own_end_byte"
        )
        if self._all_sections is None and self._files_asked >= _LOAD_ALL_AFTER:
            # A busy process: one scan of every section's metadata beats a query per file.
            with self.index.connect() as con:
                everything = con.execute(f"SELECT file, {cols} FROM sections ORDER BY file, idx").fetchall()
            grouped: dict[str, list[tuple[Any, ...]]] = {}
            for row in everything:
                grouped.setdefault(row[0], []).append(row[1:])
            self._all_sections = grouped
        if self._all_sections is not None and self._stale_sections:
            stale = sorted(self._stale_sections)
            self._stale_sections.clear()
            with self.index.connect() as con:
                for path in stale:
                    rows = con.execute(
                        f"SELECT {cols} FROM sections WHERE file = ? ORDER BY idx", [path]
                    ).fetchall()
                    if rows:
                        self._all_sections[path] = rows
                    else:
                        self._all_sections.pop(path, None)
        if self._all_sections is not None:
            return self._all_sections.get(relpath, [])
        self._files_asked += 1
        with self.index.connect() as con:
            return con.execute(
                f"SELECT {cols} FROM sections WHERE file = ? ORDER BY idx", [relpath]
            ).fetchall()

    def section(self, file: str, identifier: str | None) -> tuple[Document, Section | None]:
        """A section of a file by heading text, path, anchor or ID (None identifier: the whole file)."""
        doc = self.document(self.resolve_file(file))
        if identifier is None or not identifier.strip():
            return doc, None
        return doc, find_section(doc, identifier)

    def section_content(self, file: str, identifier: str | None, *, own: bool = False) -> str:
        """The exact Markdown of a section (or of the whole file)."""
        doc, sec = self.section(file, identifier)
        return self.markdown(doc, sec, own=own)

    def section_blocks(self, file: str, section: Section | None) -> list[dict[str, Any]]:
        """The fenced blocks in a section's own body (all of the file's when None)."""
        self.fresh()
        sql = "SELECT idx, lang, start_line, end_line, content, data, error FROM blocks WHERE file = ?"
        params: list[Any] = [file]
        if section is not None:
            sql += " AND section = ?"
            params.append(section.index)
        with self.index.connect() as con:
            rows = con.execute(sql + " ORDER BY idx", params).fetchall()
        return [
            {
                "index": r[0],
                "lang": r[1],
                "start_line": r[2],
                "end_line": r[3],
                "content": r[4],
                "data": json.loads(r[5]) if r[5] is not None else None,
                "error": r[6],
            }
            for r in rows
        ]

    # ----- IDs ---------------------------------------------------------------------------------

    def find_by_id(self, ident: str) -> list[Definition]:
        """Every definition of an ID (empty when none)."""
        self.fresh()
        with self._lock:
            return list(self._definitions().get(ident.strip(), []))

    def similar_ids(self, ident: str, limit: int = 5) -> list[str]:
        """Defined IDs that look like `ident` (case-insensitive prefix or containment)."""
        self.fresh()
        folded = ident.strip().casefold()
        out = [k for k in self._definitions() if folded and folded in k.casefold()]
        return sorted(out)[:limit]

    def references(self, ident: str, limit: int = 1000) -> list[Reference]:
        """Every place an ID is mentioned other than its definitions, in file order."""
        self.fresh()
        with self.index.connect() as con:
            rows = con.execute(
                "SELECT id, file, line, section, section_path FROM ids WHERE id = ? AND kind = 'ref' "
                "ORDER BY file, line LIMIT ?",
                [ident.strip(), limit],
            ).fetchall()
        out: list[Reference] = []
        lines_cache: dict[str, list[str]] = {}
        for r in rows:
            lines = lines_cache.get(r[1])
            if lines is None:
                try:
                    lines = split_lines((self.settings.udm_root / r[1]).read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError):
                    lines = []
                lines_cache[r[1]] = lines
            text = lines[r[2] - 1].strip() if 0 < r[2] <= len(lines) else ""
            out.append(Reference(r[0], r[1], r[2], r[3], r[4], text))
        return out

    # ----- structured definitions ----------------------------------------------------------------

    def _one(self, table: str, key_col: str, key: str, what: str) -> dict[str, Any]:
        self.fresh()
        with self.index.connect() as con:
            cur = con.execute(f"SELECT * FROM {table} WHERE {key_col} = ?", [key.strip()])
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
            if not rows:
                cur = con.execute(f"SELECT * FROM {table} WHERE lower({key_col}) = lower(?)", [key.strip()])
                rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        if not rows:
            raise TargetNotFoundError(f"no {what} '{key}' in the UDM")
        if len(rows) > 1:
            raise AmbiguousTargetError(
                f"{what} '{key}' is defined {len(rows)} times",
                [f"{r['file']}:{r['line']} {r.get('section_path') or ''}".strip() for r in rows],
            )
        row = rows[0]
        for col in ("definition", "input_schema", "output_schema", "value"):
            if col in row and isinstance(row[col], str):
                row[col] = json.loads(row[col])
        return row

    def task(self, ident: str) -> dict[str, Any]:
        """A task's row: id, title, status, phase, milestone, mode, depends_on, file, line, definition."""
        return self._one("tasks", "id", ident, "task")

    def mode(self, ident: str) -> dict[str, Any]:
        """A mode's row with its definition."""
        return self._one("modes", "id", ident, "mode")

    def tool(self, name: str) -> dict[str, Any]:
        """A tool's row: name, description, input/output schemas, definition."""
        return self._one("tools", "name", name, "tool")

    def config(self, key: str) -> dict[str, Any]:
        """A config entry by dotted key path (`http.timeout`); its value is parsed JSON."""
        return self._one("config", "key", key, "config key")

    def config_keys(self, prefix: str, limit: int = 20) -> list[str]:
        """Config keys starting with `prefix` (for suggestions)."""
        self.fresh()
        with self.index.connect() as con:
            rows = con.execute(
                "SELECT DISTINCT key FROM config WHERE key ILIKE ? ORDER BY key LIMIT ?",
                [f"%{prefix}%", limit],
            ).fetchall()
        return [r[0] for r in rows]

    # ----- search --------------------------------------------------------------------------------

    def search(self, text: str, limit: int = 10) -> list[SearchHit]:
        """Ranked sections for `text` (BM25 over titles and bodies; IDs match whole)."""
        self.fresh()
        with self._lock:
            if self._search is None:
                search = SearchIndex(
                    self.index.search_path, list(self.settings.id_patterns), root=self.settings.udm_root
                )
                if search.generation() != self.index.generation:
                    self.index.rebuild_search(self.index.generation, search)
                self._search = search
            return self._search.search(text, limit)

    def close(self) -> None:
        """Release the index connection and watches."""
        self.index.close()


def relative_to_root(settings: Settings, path: Path) -> str:
    """A path under the UDM root as the index names it."""
    return path.resolve().relative_to(settings.udm_root.resolve()).as_posix()
