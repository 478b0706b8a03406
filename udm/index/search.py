"""Ranked full-text search over sections with tantivy (BM25), keeping IDs as whole tokens.

Words are stemmed English tokens in `title` and `body`; the IDs a section mentions go, whole, into
a `raw`-tokenized `ids` field, so `TASK-P0-M0.1-T001` is one term instead of six. A query word
that is an ID searches that field (boosted); every other word searches title (boosted) and body.
"""

from __future__ import annotations

import glob
import itertools
import os
import queue
import re
import shutil
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import tantivy

from udm.markdown import id_matcher

__all__ = ["SearchBuilder", "SearchHit", "SearchIndex"]

_WORD = re.compile(r"\w+", re.UNICODE)
_HEAP = 200_000_000


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked section."""

    file: str
    section: int
    title: str
    path: str
    line: int
    score: float
    snippet: str
    snippet_line: int


def _schema() -> tantivy.Schema:
    b = tantivy.SchemaBuilder()
    b.add_text_field("file", stored=True, tokenizer_name="raw")
    b.add_integer_field("section", stored=True, indexed=False)
    b.add_integer_field("line", stored=True, indexed=False)
    b.add_text_field("title", stored=True, tokenizer_name="en_stem")
    b.add_text_field("path", stored=True, tokenizer_name="raw", index_option="basic")
    # The body is neither stored nor positioned (no phrase queries): snippets are read from the file.
    b.add_text_field("body", stored=False, tokenizer_name="en_stem", index_option="freq")
    b.add_integer_field("start_byte", stored=True, indexed=False)
    b.add_integer_field("end_byte", stored=True, indexed=False)
    b.add_text_field("ids", stored=False, tokenizer_name="raw", index_option="freq")
    b.add_text_field("defines", stored=False, tokenizer_name="raw", index_option="basic")
    return b.build()


class SearchIndex:
    """The tantivy index in `<state>/search`."""

    def __init__(self, path: Path, id_patterns: list[str] | None = None, root: Path | None = None) -> None:
        self.path = Path(path)
        self.root = Path(root) if root is not None else None
        self.matcher = id_matcher(id_patterns)
        self._index: tantivy.Index | None = None

    def _open(self, create: bool = False) -> tantivy.Index:
        if self._index is None:
            if create or not (self.path / "meta.json").exists():
                self.path.mkdir(parents=True, exist_ok=True)
            self._index = tantivy.Index(_schema(), path=str(self.path), reuse=True)
        return self._index

    def reset(self) -> None:
        """Drop the index files."""
        self._index = None
        shutil.rmtree(self.path, ignore_errors=True)

    def _doc(self, row: dict[str, Any]) -> tantivy.Document:
        content = row["content"]
        return tantivy.Document(
            file=row["file"],
            section=int(row["idx"]),
            line=int(row["start_line"]),
            title=row["title"],
            path=row["path"],
            body=content,
            start_byte=int(row.get("start_byte") or 0),
            end_byte=int(row.get("own_end_byte") or 0),
            # The IDs the parse found in the section (`document_rows` gives them as `mentions`).
            ids=list(row.get("mentions") or []) or [""],
            defines=list(row.get("ids") or []) or [""],
        )

    def _body(self, file: str, start: Any, end: Any) -> str:
        """A section's own text, read by byte range from the file (empty when it cannot be read)."""
        if self.root is None or not file or start is None or end is None or end <= start:
            return ""
        try:
            fd = os.open(self.root / file, os.O_RDONLY)
            try:
                return os.pread(fd, int(end) - int(start), int(start)).decode("utf-8", errors="replace")
            finally:
                os.close(fd)
        except OSError:
            return ""

    def generation(self) -> int:
        """The index generation this search index reflects (-1 when unknown)."""
        try:
            return int((self.path / "udm-generation").read_text().strip())
        except (OSError, ValueError):
            return -1

    def update(
        self,
        *,
        full: bool,
        removed: list[str],
        sections_glob: str | None = None,
        rows: list[dict[str, Any]] | None = None,
        generation: int | None = None,
        section_files: Iterable[str] = (),
    ) -> int:
        """Drop the sections of `removed` files (everything when `full`) and add the new rows.

        `generation` (when given) is recorded once the commit is done; otherwise the caller records it
        with `set_generation()` after its own transaction succeeded.
        """
        if full:
            self.reset()
        index = self._open(create=True)
        # A full build may use every core (parsing is over by then); small updates stay light.
        writer = index.writer(
            heap_size=_HEAP if full else 50_000_000, num_threads=(os.cpu_count() or 1) if full else 1
        )
        if not full:
            for rel in removed:
                writer.delete_documents_by_term("file", rel)
        added = 0
        for row in rows or []:
            writer.add_document(self._doc(row))
            added += 1
        # `section_files` may be a stream that blocks until the next parse chunk is written.
        for name in itertools.chain(sorted(glob.glob(sections_glob)) if sections_glob else [], section_files):
            with open(name, "rb") as fh:
                for row in orjson.loads(fh.read()):
                    writer.add_document(self._doc(row))
                    added += 1
        writer.commit()
        # Every update waits for the merges its commit started: a writer let go mid-merge abandons
        # the merge, so each small refresh past the merge policy's 8 segments left its half-written
        # files behind for good and one more segment for every search to visit. The merges a small
        # commit starts join small segments (tantivy's log merge policy merges like-sized ones).
        writer.wait_merging_threads()
        index.reload()
        if generation is not None:
            self.set_generation(generation)
        return added

    def set_generation(self, generation: int) -> None:
        """Record the index generation this search index reflects (-1: unknown, rebuild on next use)."""
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "udm-generation").write_text(str(generation))

    def search(self, text: str, limit: int = 10) -> list[SearchHit]:
        """The best sections for `text`, best first."""
        index = self._open()
        ids = list(dict.fromkeys(self.matcher.findall(text)))
        rest = self.matcher.regex.sub(" ", text)
        words = [w.lower() for w in _WORD.findall(rest)]
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        schema = index.schema
        for ident in ids:
            # The section that defines an ID outranks the ones that mention it.
            q = tantivy.Query.term_query(schema, "ids", ident)
            clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(q, 3.0)))
            d = tantivy.Query.term_query(schema, "defines", ident)
            clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(d, 10.0)))
        if words:
            parsed = index.parse_query(" ".join(words), ["title", "body"], field_boosts={"title": 2.0})
            clauses.append((tantivy.Occur.Should, parsed))
        if not clauses:
            return []
        query = tantivy.Query.boolean_query(clauses)
        searcher = index.searcher()
        result = searcher.search(query, limit)
        hits: list[SearchHit] = []
        needles = ids + words
        for score, address in result.hits:
            doc = searcher.doc(address)
            body = self._body(
                doc.get_first("file") or "", doc.get_first("start_byte"), doc.get_first("end_byte")
            )
            snippet, offset = _snippet(body, needles)
            line = int(doc.get_first("line") or 1)
            hits.append(
                SearchHit(
                    file=doc.get_first("file") or "",
                    section=int(doc.get_first("section") or 0),
                    title=doc.get_first("title") or "",
                    path=doc.get_first("path") or "",
                    line=line,
                    score=round(float(score), 4),
                    snippet=snippet,
                    snippet_line=line + body.count("\n", 0, offset),
                )
            )
        return hits


class SearchBuilder:
    """A full rebuild of a search index on its own thread, fed section-row files as they are written."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self._queue: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._closed = False
        self._drained = False
        self._thread = threading.Thread(target=self._run, name="udm-search-build", daemon=True)
        self._thread.start()

    def _files(self) -> Iterator[str]:
        while (batch := self._queue.get()) is not None:
            yield from batch
        self._drained = True

    def _run(self) -> None:
        try:
            self.index.update(full=True, removed=[], section_files=self._files(), generation=None)
        except BaseException as exc:  # re-raised by finish() in the caller's thread
            self._error = exc
            # Keep taking batches until the producer says it is done (it never blocks on a full queue).
            while not self._drained and self._queue.get() is not None:
                pass

    def feed(self, files: list[str]) -> None:
        """Queue JSON files of section rows (as `document_rows` makes them) for indexing."""
        self._queue.put(files)

    def end_input(self) -> None:
        """No more files: the thread commits while the caller goes on (idempotent)."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)

    def finish(self) -> None:
        """No more files: wait for the commit, and raise whatever failed on the thread."""
        self.close()
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        """Stop feeding and wait for the thread (idempotent)."""
        self.end_input()
        self._thread.join()


def _snippet(body: str, needles: list[str], width: int = 160) -> tuple[str, int]:
    """A one-line excerpt around the first needle found (case-insensitive) and its offset."""
    lowered = body.lower()
    best = -1
    for needle in needles:
        pos = lowered.find(needle.lower())
        if pos >= 0 and (best < 0 or pos < best):
            best = pos
    if best < 0:
        best = 0
    start = max(0, best - width // 3)
    end = min(len(body), start + width)
    text = " ".join(body[start:end].split())
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(body) else ""
    return prefix + text + suffix, best
