"""Link resolution in the index: one pass serves the full build, a bulk load and a small refresh.

The rules are the site's (udm.site.routes: `LinkResolver`, `resolve_links`). This module picks the
link rows a refresh has to (re)resolve, answers which heading anchors exist (from the sections table,
or from memory for files whose rows are about to be replaced), and stores the verdicts.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from udm.site import (
    FolderIgnores,
    LinkResolver,
    Routes,
    Site,
    beside_meta,
    beside_text,
    exists_within,
    outside_root,
    repeated_from,
    resolve_links,
)

__all__ = ["NESTED_IGNORES", "FreshRows", "resolve_index_links", "routes_from"]

_STORED = (
    "SELECT rowid, file, target, target_file, fragment, resolved, form FROM links WHERE kind <> 'external'"
)
# Up to this many files, their anchors are read with point queries (and may be kept in a cache);
# past it, one semi join answers just the (file, anchor) pairs the links ask for.
_POINT_FILES = 256
# Point queries go out this many to a statement: DuckDB pushes each `file = ?` of a UNION ALL into
# its scan, not an IN list (measured 2-3x faster than IN and than separate statements).
_POINT_BATCH = 64


@dataclass
class FreshRows:
    """The changed files' rows in memory, before they replace the stored ones (a small refresh)."""

    # Their link rows: the verdicts (target_file, fragment, resolved) are written into these dicts.
    links: list[dict[str, Any]]
    # Every changed file's heading anchors now (an empty set for a removed file).
    anchors: dict[str, set[str]]


def routes_from(con: duckdb.DuckDBPyConnection, site: Site) -> Routes:
    """The route table of the indexed pages (paths plus route front matter), from the files table."""
    pages: set[str] = set()
    meta: dict[str, Any] = {}
    for path, site_meta in con.execute("SELECT path, site FROM files WHERE parser <> 'none'").fetchall():
        pages.add(path)
        if site_meta:
            meta[path] = json.loads(site_meta)
    return Routes(site, pages, meta)


def resolve_index_links(
    con: duckdb.DuckDBPyConnection,
    routes: Routes,
    root: Path,
    changed: list[str] | None = None,
    *,
    moved: bool = True,
    fresh: FreshRows | None = None,
    anchor_cache: dict[str, set[str]] | None = None,
    page_bytes: int,
) -> None:
    """Resolve links with the site's rules and store the verdicts.

    `changed` None: every link (a full build). Otherwise the links of the changed files, the links
    of other files into them, and, when `moved` (the set of pages or their routes changed), every
    other link that did not resolve (a new page may be its target). With `fresh` the changed files'
    links and anchors are the rows in memory (verdicts set in place, before they are inserted);
    without it both are read from the tables, already loaded. `anchor_cache` keeps the anchors of
    the files read here for the next small refresh. `page_bytes`: the manual's `max_file_bytes`, as
    far as a page beside the manual is read for its anchors.
    """
    crossing = bool(routes.site.autorefs)
    # MyST's targets are the whole site's: a change anywhere may resolve a link that did not.
    stored = _stored_rows(
        con, changed, moved or bool(routes.site.labels), own=fresh is None, crossing=crossing
    )
    new_links = fresh.links if fresh is not None else []
    rows: list[tuple[Any, str, str, str]] = [
        (("new", i), r["file"], r["target"], r["form"])
        for i, r in enumerate(new_links)
        if r["kind"] != "external"
    ]
    rows += [(("old", r[0]), r[1], r[2], r[6] or "") for r in stored]
    before = {("old", r[0]): r[3:6] for r in stored}
    in_memory = fresh.anchors if fresh is not None else {}
    cache = {} if anchor_cache is None else anchor_cache
    for path in changed or ():
        cache.pop(path, None)
    read_page = _page_reader(root, page_bytes)
    ignores = FolderIgnores(root)
    verdicts = resolve_links(
        LinkResolver(
            routes,
            _file_exists(root),
            _folder_exists(root),
            beside=beside_meta(root),
            ignore_lines=ignores,
        ),
        rows,
        _anchor_lookup(con, in_memory, cache),
        read_page,
        _holders(con, in_memory, read_page, routes) if crossing or routes.site.labels else None,
    )
    updates = []
    for key, target_file, fragment, ok in verdicts:
        if key[0] == "new":
            row = new_links[key[1]]
            row["target_file"], row["fragment"], row["resolved"] = target_file, fragment, ok
        elif (target_file, fragment, ok) != before[key]:
            updates.append((key[1], target_file, fragment, ok))
    cache.update(in_memory)
    _write_verdicts(con, updates)
    _record_ignores(con, ignores, full=changed is None)


# The meta key holding the state of each `.gitignore` of a folder of the manual a verdict read.
NESTED_IGNORES = "nested_ignores"


def _record_ignores(con: duckdb.DuckDBPyConnection, ignores: FolderIgnores, *, full: bool) -> None:
    """Keep the state of the `.gitignore` files of the manual's folders that the verdicts read
    (`UdmIndex` compares it with the disk's: a change to one means a full build); a partial resolve
    adds to what the last ones read."""
    state = ignores.consulted()
    if not state and not full:
        return  # nothing read: what is kept stays (one statement less per small refresh)
    if not full:
        row = con.execute("SELECT value FROM meta WHERE key = ?", [NESTED_IGNORES]).fetchone()
        state = {**(json.loads(row[0]) if row else {}), **state}
    con.execute(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)", [NESTED_IGNORES, json.dumps(state, sort_keys=True)]
    )


def _member(column: str, files: list[str]) -> tuple[str, Any]:
    """SQL testing `column` against the files, with its parameter ($1).

    `= $1` is pushed into the scan; a short list is tested in place; a long one is joined.
    """
    if len(files) == 1:
        return f"{column} = $1", files[0]
    if len(files) <= _POINT_BATCH:
        return f"list_contains($1::VARCHAR[], {column})", files
    return f"{column} IN (SELECT unnest($1::VARCHAR[]))", files


def _stored_rows(
    con: duckdb.DuckDBPyConnection,
    changed: list[str] | None,
    moved: bool,
    *,
    own: bool,
    crossing: bool = False,
) -> list[tuple[Any, ...]]:
    """The stored link rows to resolve: all, or those about the changed files (`own`: and theirs).
    `crossing`: the site's mkdocs-autorefs cross-references too (any page's anchors may be theirs)."""
    if changed is None:
        return con.execute(_STORED).fetchall()
    in_changed, param = _member("file", changed)
    into, _ = _member("target_file", changed)
    if moved:
        into = f"({into} OR resolved IS NOT true)"
    if crossing:
        into = f"({into} OR form = 'autoref')"
    where = f"({in_changed} OR {into})" if own else f"NOT {in_changed} AND {into}"
    return con.execute(f"{_STORED} AND {where}", [param]).fetchall()


def _anchor_lookup(
    con: duckdb.DuckDBPyConnection, in_memory: dict[str, set[str]], cache: dict[str, set[str]]
) -> Callable[[set[tuple[str, str]]], set[tuple[str, str]]]:
    """`anchors_in(pairs)` for `resolve_links`: which (page, heading anchor) pairs exist."""

    def anchors_in(pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
        ask = {(f, a) for f, a in pairs if f not in in_memory and f not in cache}
        files = sorted({f for f, _ in ask})
        present: set[tuple[str, str]] = set()
        if len(files) > _POINT_FILES:
            present = _present_pairs(con, ask)
            pairs = pairs - ask
        else:
            _load_anchors(con, files, cache)
        present.update((f, a) for f, a in pairs if a in (in_memory[f] if f in in_memory else cache[f]))
        return present

    return anchors_in


def _load_anchors(con: duckdb.DuckDBPyConnection, files: list[str], cache: dict[str, set[str]]) -> None:
    """Every heading anchor of `files` into `cache`, a UNION ALL of point queries at a time."""
    for k in range(0, len(files), _POINT_BATCH):
        part = files[k : k + _POINT_BATCH]
        sql = " UNION ALL ".join(["SELECT file, anchor FROM sections WHERE file = ?"] * len(part))
        for f in part:
            cache[f] = set()
        for file, anchor in con.execute(sql, part).fetchall():
            cache[file].add(anchor)


def _present_pairs(con: duckdb.DuckDBPyConnection, pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of many (file, anchor) pairs the sections table holds."""
    # Only the pairs links ask for come back: fetching every anchor costs ~1 s per 100k sections.
    files, anchors = zip(*pairs, strict=True)
    return set(
        con.execute(
            "SELECT s.file, s.anchor FROM sections s SEMI JOIN (SELECT unnest(?::VARCHAR[]) AS f, "
            "unnest(?::VARCHAR[]) AS a) w ON s.file = w.f AND s.anchor = w.a",
            [list(files), list(anchors)],
        ).fetchall()
    )


_ANCHOR_ID = re.compile(r"[\w.:/-]{1,200}")
# Where a page names an id itself: `{#id}`, `[](){#id}`, `{ #id }`, `id="id"`, `name='id'`, MyST's
# `(id)=` and `:name: id` (the same pattern for RE2 in DuckDB and for Python's re).
_NAMED = r"(?:#|\b(?:id|name)=[\"']?|\(|:(?:name|label):[ \t]+)"
# One scan of the sections' text looks for this many characters of identifiers at once (RE2 compiles
# an alternation of them; a much longer one runs out of its memory budget).
_PATTERN_CHARS = 8_000


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    """The identifiers in runs whose alternation stays under `_PATTERN_CHARS`."""
    part: list[str] = []
    size = 0
    for ident in ids:
        if part and size + len(ident) > _PATTERN_CHARS:
            yield part
            part, size = [], 0
        part.append(ident)
        size += len(ident) + 1
    if part:
        yield part


# A heading line behind a container's marks or indentation (RE2 and Python's re read it alike).
_NESTED_HEADING = r"(?m)^(?:[ \t]*>[ \t>]*|[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+|[ \t]{2,})#{1,6}[ \t]"
# Beyond this many (page, identifier) candidates the nested headings are not looked into.
_MAX_NESTED_PAIRS = 20_000


def _holders(
    con: duckdb.DuckDBPyConnection,
    in_memory: dict[str, set[str]],
    text_of: Callable[[str], str | None],
    routes: Routes,
) -> Callable[[set[str]], dict[str, set[str]]]:
    """`pages_with(identifiers)` for `resolve_links`: the site's pages whose heading anchors hold each
    identifier (the stored sections, and the changed files' anchors in memory); where the site has
    autorefs alone, also the pages whose text names it as an id (`#id` of an attribute list or
    Markdown anchor, `id=`/`name=` of a tag: confirmed on the page's text), looked for the same way
    in the stored sections and in the changed files, so a small refresh agrees with a full build."""
    explicit = routes.site.autorefs == "headings" or routes.site.labels
    on_site = routes.page_route

    def sectioned(names: set[str]) -> dict[str, set[str]]:
        """The pages whose section anchors hold each name: stored rows, or the changed files' in memory."""
        out: dict[str, set[str]] = {}
        for anchor, file in con.execute(
            "SELECT DISTINCT anchor, file FROM sections WHERE list_contains(?::VARCHAR[], anchor)",
            [sorted(names)],
        ).fetchall():
            if file not in in_memory:
                out.setdefault(anchor, set()).add(file)
        for file, anchors in in_memory.items():
            for name in names & anchors:
                out.setdefault(name, set()).add(file)
        return out

    def pages_with(ids: set[str]) -> dict[str, set[str]]:
        wanted = sorted(ids)
        out = sectioned(ids)
        # A repeated heading's id ends in `_1` (Python-Markdown's toc): the pages holding the first
        # are candidates, which `resolve_links` confirms with the page's own numbering.
        repeats = {ident: base for ident in wanted if ident not in out and (base := repeated_from(ident))}
        if repeats:
            firsts = sectioned(set(repeats.values()))
            for ident, base in repeats.items():
                if base in firsts:
                    out.setdefault(ident, set()).update(firsts[base])
        # An id an attribute list or a tag can give is a run of word characters, `.`, `:` and `-`.
        left = [i for i in wanted if i not in out and _ANCHOR_ID.fullmatch(i)]
        headless = list(left)  # no section's anchor: a page may still hold it in a nested heading
        if explicit and left:
            for part in _chunks(left):
                pattern = _NAMED + "(?:" + "|".join(re.escape(i) for i in part) + ")"
                found = [
                    (file, content)
                    for file, content in con.execute(
                        "SELECT DISTINCT file, content FROM sections WHERE regexp_matches(content, ?)",
                        [pattern],
                    ).fetchall()
                    if file not in in_memory  # their stored rows are about to be replaced
                ]
                if routes.site.labels:
                    # MyST targets before a page's first heading are kept with its file row.
                    found += [
                        (file, meta)
                        for file, meta in con.execute(
                            "SELECT path, site FROM files WHERE site IS NOT NULL AND regexp_matches(site, ?)",
                            ["(?:" + "|".join(re.escape(i) for i in part) + ")"],
                        ).fetchall()
                        if file not in in_memory
                    ]
                named = re.compile(pattern)
                for file in in_memory:
                    text = text_of(file)
                    if text is not None and named.search(text):
                        found.append((file, text))
                for file, content in found:
                    for ident in part:
                        if ident in content:
                            out.setdefault(ident, set()).add(file)
        if explicit and headless:
            # A heading inside a block quote, a list item or an admonition starts no section, yet has
            # an id: the pages holding such headings are candidates, confirmed by `resolve_links`.
            nested = [
                file
                for (file,) in con.execute(
                    "SELECT DISTINCT file FROM sections WHERE regexp_matches(content, ?)", [_NESTED_HEADING]
                ).fetchall()
                if file not in in_memory
            ]
            nested += [
                f for f in in_memory if (t := text_of(f)) is not None and re.search(_NESTED_HEADING, t)
            ]
            if len(nested) * len(headless) <= _MAX_NESTED_PAIRS:
                for ident in headless:
                    out.setdefault(ident, set()).update(nested)
        return {i: {p for p in pages if on_site(p) is not None} for i, pages in out.items()}

    return pages_with


def _write_verdicts(con: duckdb.DuckDBPyConnection, verdicts: list[tuple[Any, ...]]) -> None:
    if not verdicts:
        return
    con.execute(
        "UPDATE links SET target_file = v.tf, fragment = v.fr, resolved = v.r FROM (SELECT "
        "unnest(?::BIGINT[]) AS rid, unnest(?::VARCHAR[]) AS tf, unnest(?::VARCHAR[]) AS fr, "
        "unnest(?::BOOLEAN[]) AS r) v WHERE links.rowid = v.rid",
        [
            [v[0] for v in verdicts],
            [v[1] for v in verdicts],
            [v[2] for v in verdicts],
            [v[3] for v in verdicts],
        ],
    )


def _file_exists(root: Path) -> Callable[[str], bool]:
    """Whether a file (not a folder) exists under the root, remembered for one resolution pass."""
    seen: dict[str, bool] = {}
    base = str(root)

    within = exists_within(base)

    def exists(rel: str) -> bool:
        hit = seen.get(rel)
        if hit is None:
            hit = seen[rel] = within(rel)
        return hit

    return exists


def _folder_exists(root: Path) -> Callable[[str], bool]:
    """Whether a folder exists under the root (asked only for a plain manual's links)."""
    return exists_within(str(root), folder=True)


def _page_reader(root: Path, page_bytes: int) -> Callable[[str], str | None]:
    """A page's text from the disk (links into it named an anchor that is no heading's); one beside
    the manual up to `page_bytes`."""

    def read_page(rel: str) -> str | None:
        if outside_root(rel):
            return beside_text(root, rel, page_bytes)  # as the patch validator reads it
        try:
            with open(os.path.join(root, rel), "rb") as fh:
                return fh.read(64 << 20).decode("utf-8", errors="replace")
        except OSError:
            return None

    return read_page
