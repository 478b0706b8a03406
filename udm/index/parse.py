"""Parsing files into index rows: one file at a time, a chunk into row files, or all of them in parallel.

`parse_all` is the full build's parse (worker processes once there is enough text); a small refresh
parses its few files in memory (`parse_rows` without an output folder).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from udm.index.extract import TABLE_COLUMNS, ParseOptions, document_rows, parse_options
from udm.index.lookup import manual_pages
from udm.index.schema import json_bytes
from udm.markdown import MarkdownParseError, parse_document
from udm.site import explicit_anchors, route_meta

if TYPE_CHECKING:
    from udm.config import Settings
    from udm.markdown import Document

__all__ = [
    "PARALLEL_MIN_BYTES",
    "PageRead",
    "ParsedRows",
    "chunk_sections",
    "decode_page",
    "in_process",
    "manual_documents",
    "parse_all",
    "parse_chunk",
    "parse_rows",
    "read_page",
    "skip_reason",
]

# Below this much text, forking workers costs more than it saves.
PARALLEL_MIN_BYTES = 2_000_000


def in_process(total_bytes: int) -> bool:
    """Whether this much text parses sooner in this process than in forked workers (a small refresh's size)."""
    return total_bytes < PARALLEL_MIN_BYTES


# A buffer of one table's rows is written out once it holds this many (a chunk's memory stays bounded).
_FLUSH_ROWS = 50_000


class ParsedRows:
    """What parsing some files gave: file rows, errors, row counts, and the rows by table.

    With `outdir` the table rows go to JSON array files `<table>.<chunk>.<part>.json` there as
    buffers fill; without it every row stays in `tables` (a small refresh loads them from memory).
    """

    def __init__(self, outdir: str | None = None, chunk: int = 0) -> None:
        self.files: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.counts = dict.fromkeys(TABLE_COLUMNS, 0)
        self.tables: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLE_COLUMNS}
        self._outdir = outdir
        self._chunk = chunk
        self._parts = dict.fromkeys(TABLE_COLUMNS, 0)

    def add(self, rows_by_table: dict[str, list[dict[str, Any]]]) -> None:
        """Buffer one file's rows, writing out a table's buffer once it is large."""
        for table, rows in rows_by_table.items():
            if rows:
                self.counts[table] += len(rows)
                self.tables[table].extend(rows)
                if len(self.tables[table]) >= _FLUSH_ROWS:
                    self.flush(table)

    def flush(self, table: str) -> None:
        """Write a table's buffered rows out as one JSON array file (when there is an output folder)."""
        rows = self.tables[table]
        if rows and self._outdir is not None:
            # One dump of a whole array costs far less than a dumps() per row.
            name = os.path.join(self._outdir, f"{table}.{self._chunk}.{self._parts[table]}.json")
            with open(name, "wb") as fh:
                fh.write(json_bytes(rows))
            self._parts[table] += 1
            self.tables[table] = []


def _file_row(
    rel: str, digest: str, st: os.stat_result, now: str, parser: str, error: str | None, tables: list[str]
) -> dict[str, Any]:
    return {
        "path": rel,
        "content_hash": digest,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "indexed_at": now,
        "parser": parser,
        "error": error,
        "tables": tables,
        "site": None,
    }


class PageRead(NamedTuple):
    """One page's bytes as the index reads them: its text, or the error that makes the index skip it."""

    st: os.stat_result | None  # None: the page could not be read at all (no file row)
    digest: str  # sha256 of the bytes; "" when they were not read (too large)
    text: str | None  # None: skipped, `error` says why
    error: str | None  # "<path>:<line>: <why>", the index's files.error and problem text


def read_page(root: str, rel: str, max_file_bytes: int) -> PageRead:
    """Read one page the way the index does: too large, not valid UTF-8 or unreadable is an error."""
    full = os.path.join(root, rel)
    try:
        st = os.stat(full)
        if st.st_size > max_file_bytes:
            # Parsing holds a tree of the whole file: past the limit the file is listed, not parsed.
            msg = f"{rel}:1: skipped: too large ({st.st_size} bytes > max_file_bytes {max_file_bytes})"
            return PageRead(st, "", None, msg)
        raw = Path(full).read_bytes()
    except OSError as exc:
        return PageRead(None, "", None, f"{rel}:1: cannot read: {exc.strerror or exc}")
    return PageRead(st, hashlib.sha256(raw).hexdigest(), *decode_page(rel, raw))


def decode_page(rel: str, raw: bytes) -> tuple[str | None, str | None]:
    """(text, None), or (None, '<rel>:<line>: not valid UTF-8 (byte N)') when the bytes are not UTF-8."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, f"{rel}:{line}: not valid UTF-8 (byte {exc.start})"


def skip_reason(path: str, error: str | None) -> tuple[str, str]:
    """('<path>:<line>', 'skipped: <why>') of a page the index skipped, from its `read_page` error."""
    match = re.match(rf"{re.escape(path)}:(\d+): (.*)", error or "", re.DOTALL)
    where, why = (f"{path}:{match[1]}", match[2]) if match else (path, error or "not parsed")
    return where, why if why.startswith("skipped") else f"skipped: {why}"


def manual_documents(settings: Settings, skipped: list[tuple[str, PageRead]]) -> Iterator[Document]:
    """The manual's pages parsed from the files as the index parses them, without the index.

    The same pages (`manual_pages`) and parse options; a page the index skips (too large, not valid
    UTF-8, unreadable) is not parsed but added to `skipped` as (path, how `read_page` read it).
    """
    options = parse_options(settings)
    root = str(settings.udm_root)
    for rel in manual_pages(settings):
        doc, page = parse_page(rel, read_page(root, rel, options.max_file_bytes), options)
        if doc is None:
            skipped.append((rel, page))
            continue
        yield doc


def parse_page(rel: str, page: PageRead, options: ParseOptions) -> tuple[Document | None, PageRead]:
    """The page's document, or None and the page with why the index skips it (unread, or a file the
    Markdown parser fails on with every rule set: a parser bug, so the file is listed, not indexed)."""
    if page.text is None:
        return None, page
    try:
        doc = parse_document(
            page.text,
            rel,
            options.id_patterns,
            data_sections=options.data_sections,
            shortcodes=options.shortcodes,
            autorefs=options.crossing_in(rel),
            indented=options.indented_in(rel),
            roles=options.roles_in(rel),
            liquid=options.liquid_in(rel),
        )
        return doc, page
    except MarkdownParseError as exc:
        return None, page._replace(text=None, error=str(exc))


def _parse_file(root: str, rel: str, patterns: ParseOptions, now: str, out: ParsedRows) -> None:
    """Parse one file into `out`: its file row and table rows, or its file row and an error."""
    doc, page = parse_page(rel, read_page(root, rel, patterns.max_file_bytes), patterns)
    if page.error is not None:
        out.errors.append(page.error)
    if page.st is None:
        return
    st, digest = page.st, page.digest
    if doc is None:
        out.files.append(_file_row(rel, digest, st, now, "none", page.error, []))
        return
    out.errors.extend(doc.errors)
    out.errors.extend(doc.notes)

    def exists(target: str) -> bool:
        return os.path.exists(os.path.join(root, target))

    rows_by_table = document_rows(doc, exists=exists)
    holds = [table for table, rows in rows_by_table.items() if rows]
    row = _file_row(rel, digest, st, now, doc.parser, "; ".join(doc.errors[:3]) or None, holds)
    # The front matter keys that move the page's route (Docusaurus slug/id, Hugo url/aliases).
    meta = route_meta(doc.front_matter)
    labels = _preamble_labels(doc) if patterns.roles_in(rel) else []
    if labels:
        # MyST targets before the first heading (`(intro)=` then `# Intro`) lie in no section whose
        # text a cross-page reference is looked for in: kept here.
        meta = {**(meta or {}), "labels": labels}
    if meta:
        row["site"] = json.dumps(meta, ensure_ascii=False)
    out.files.append(row)
    out.add(rows_by_table)


_MAX_LABELS = 100


def _preamble_labels(doc: Document) -> list[str]:
    """The anchors a page names before its first heading (MyST's `(label)=` lines, a directive's
    `:name:`), where such a form may be; sorted, at most a hundred."""
    sections = doc.sections
    end = sections[0].heading_start if sections else len(doc.lines)
    if end <= 0:
        return []
    head = "".join(doc.lines[:end])
    if ")=" not in head and ":name:" not in head and ":label:" not in head:
        return []
    return sorted(explicit_anchors(head))[:_MAX_LABELS]


def parse_rows(root: str, relpaths: list[str], patterns: ParseOptions, out: ParsedRows) -> ParsedRows:
    """Parse each file into `out` (then write out what its buffers still hold); return `out`."""
    now = datetime.now(UTC).replace(tzinfo=None).isoformat()
    for rel in relpaths:
        _parse_file(root, rel, patterns, now, out)
    for table in TABLE_COLUMNS:
        out.flush(table)
    return out


def parse_chunk(
    root: str, relpaths: list[str], patterns: ParseOptions, outdir: str, chunk: int
) -> tuple[list[dict[str, Any]], list[str], dict[str, int]]:
    """Parse files and write their rows as JSON array files; return file rows, errors and counts."""
    # Parsing allocates many small acyclic objects: the cyclic collector only costs time here (~15%).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        out = parse_rows(root, relpaths, patterns, ParsedRows(outdir, chunk))
    finally:
        if was_enabled:
            gc.enable()
    return out.files, out.errors, out.counts


def chunk_sections(tmp: str, chunk: int) -> list[str]:
    """The sections row files one parse chunk wrote, in write order."""
    prefix = f"sections.{chunk}."
    names = [n for n in os.listdir(tmp) if n.startswith(prefix) and n.endswith(".json")]
    return [os.path.join(tmp, n) for n in sorted(names, key=lambda n: int(n[len(prefix) : -5]))]


def parse_all(
    root: str,
    patterns: ParseOptions,
    relpaths: list[str],
    disk: dict[str, tuple[int, int]],
    tmp: str,
    on_chunk: Callable[[int], None] | None = None,
) -> tuple[list[dict[str, Any]], list[str], dict[str, int], int]:
    """Parse files into row files under `tmp`, in worker processes when there is enough text.

    Returns file rows, errors, counts and the number of workers. `on_chunk(k)` is called as chunk
    k's files are written (in completion order).
    """
    total = sum(disk[p][0] for p in relpaths)
    cpus = os.cpu_count() or 1
    if in_process(total) or cpus < 2 or len(relpaths) < 4:
        files, errors, counts = parse_chunk(root, relpaths, patterns, tmp, 0)
        if on_chunk is not None:
            on_chunk(0)
        return files, errors, counts, 1
    # Balanced chunks by size, a few per worker so a slow file does not idle the others.
    n_chunks = cpus * 4
    chunks: list[list[str]] = [[] for _ in range(n_chunks)]
    loads = [0] * n_chunks
    for rel in sorted(relpaths, key=lambda p: -disk[p][0]):
        k = loads.index(min(loads))
        chunks[k].append(rel)
        loads[k] += disk[rel][0]
    files_all: list[dict[str, Any]] = []
    errors_all: list[str] = []
    counts_all: dict[str, int] = {}
    with ProcessPoolExecutor(max_workers=cpus) as pool:
        futures = {
            pool.submit(parse_chunk, root, chunk, patterns, tmp, k): k
            for k, chunk in enumerate(chunks)
            if chunk
        }
        if on_chunk is not None:
            for fut in as_completed(futures):
                fut.result()  # a worker's failure surfaces here
                on_chunk(futures[fut])
        # Results in chunk order, so file rows and errors come out the same every run.
        for fut in futures:
            files, errors, counts = fut.result()
            files_all.extend(files)
            errors_all.extend(errors)
            for key, value in counts.items():
                counts_all[key] = counts_all.get(key, 0) + value
    return files_all, errors_all, counts_all, cpus
