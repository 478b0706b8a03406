"""Pure application of patch operations to an in-memory view of the UDM's files, with preconditions."""

from __future__ import annotations

import difflib
import posixpath
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from udm.errors import (
    AmbiguousTargetError,
    ConflictError,
    DocumentError,
    InvalidPathError,
    PatchError,
    PathOutsideError,
    TargetError,
    TargetNotFoundError,
    UdmError,
)
from udm.index import MARKDOWN_SUFFIXES as PAGE_SUFFIXES
from udm.markdown import Block, Document, Section, find_block, find_section, parse_document, section_text
from udm.patch import format as P
from udm.patch.list_style import needs_list_style, read_list_styles, restyle_lists, starts_a_block
from udm.patch.splice import (
    changed_line_count,
    disk_form,
    edit_form,
    ensure_newline,
    format_markdown_fragment,
    merge_minimal,
    sha256_text,
    split_lines,
)
from udm.patch.structured import Format, edit_text

__all__ = ["OpReport", "Workspace", "apply_operations", "cached_parse", "check_relpath"]

MARKDOWN_SUFFIXES = (".md", ".markdown")
_STRUCTURED: dict[str, Format] = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".json5": "json5"}
_ATX_LINE = re.compile(
    r"^(?P<lead> {0,3})(?P<hashes>#{1,6})(?P<gap>[ \t]+)(?P<title>.*?)(?P<close>[ \t]+#+)?(?P<tail>[ \t]*\r?\n?)$"
)


_CACHE: OrderedDict[tuple[str, str, tuple[str, ...] | None, tuple[str, ...]], Document] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 64


def cached_parse(
    text: str, path: str, id_patterns: list[str] | None = None, data_sections: tuple[str, ...] = ()
) -> Document:
    """parse_document, remembered for the last few texts: a plan and its commit parse the same files."""
    key = (path, sha256_text(text), tuple(id_patterns) if id_patterns is not None else None, data_sections)
    with _CACHE_LOCK:
        doc = _CACHE.get(key)
        if doc is not None:
            _CACHE.move_to_end(key)
            return doc
    doc = parse_document(text, path, id_patterns, data_sections=data_sections)
    with _CACHE_LOCK:
        _CACHE[key] = doc
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return doc


def check_relpath(path: str) -> str:
    """A patch's file path as a normalised posix path inside the root, or PathOutsideError."""
    if "\x00" in path:
        raise InvalidPathError(f"path {path!r} holds a NUL byte")
    text = path.replace("\\", "/").strip()
    if not text or text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise PathOutsideError(f"path {path!r} must be relative to the UDM root")
    norm = posixpath.normpath(text)
    if norm == ".." or norm.startswith("../") or norm == ".":
        raise PathOutsideError(f"path {path!r} leaves the UDM root")
    return norm


@dataclass
class Workspace:
    """The files a patch touches, read lazily from the UDM root and edited in memory."""

    root: Path
    id_patterns: list[str] | None = None
    reader: Callable[[str], bytes | None] | None = None
    original: dict[str, str | None] = field(default_factory=dict)
    current: dict[str, str | None] = field(default_factory=dict)
    _docs: dict[str, tuple[str, Document]] = field(default_factory=dict)
    _edit: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Folders no patch may touch even when they lie inside the root (the engine's state, #17.3).
    protected: tuple[Path, ...] = ()
    # The manual's settings that decide how a page parses, as the index parses it: which suffixes are
    # Markdown pages (.mdx among them) and which sections hold data blocks.
    markdown_suffixes: tuple[str, ...] = PAGE_SUFFIXES
    data_sections: tuple[str, ...] = ()
    _sandbox: Any = None

    def __post_init__(self) -> None:
        self.root = Path(self.root).absolute()

    def real_path(self, rel: str) -> Path:
        """The real path of a file in the root: symlinks followed, each hop checked to stay inside."""
        from udm.guard import Sandbox

        if self._sandbox is None:
            self._sandbox = Sandbox([self.root], project_root=self.root, protected=self.protected)
        rel = check_relpath(rel)
        try:
            return Path(self._sandbox.resolve(rel))
        except OSError as exc:
            # A parent that is a file, a name too long, a folder we may not enter: the path is
            # unusable, which is the patch's fault, not the program's.
            if isinstance(exc, NotADirectoryError) and exc.filename:
                reason = f"{exc.filename} is a file, not a folder"
            elif exc.filename and exc.strerror:
                reason = f"{exc.filename}: {exc.strerror}"
            else:
                reason = exc.strerror or str(exc)
            raise InvalidPathError(f"cannot use path {rel!r}: {reason}") from exc

    def _read_disk(self, rel: str) -> str | None:
        if self.reader is not None:
            raw = self.reader(rel)
        else:
            real = self.real_path(rel)
            if not real.exists():
                return None
            if not real.is_file():
                raise DocumentError(f"{rel}: not a regular file")
            try:
                raw = real.read_bytes()
            except OSError as exc:
                raise DocumentError(f"{rel}: cannot read: {exc.strerror or exc}") from exc
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise DocumentError(
                f"{rel}:{line}: not valid UTF-8 (byte {exc.start}); the file is left as it is"
            ) from exc

    def read(self, rel: str) -> str | None:
        """The file's current text in this workspace (None when it does not exist)."""
        rel = check_relpath(rel)
        if rel not in self.current:
            text = self._read_disk(rel)
            self.original[rel] = text
            self.current[rel] = text
        return self.current[rel]

    def require(self, rel: str) -> str:
        """The file's current text; TargetNotFoundError naming similar files when it is missing."""
        text = self.read(rel)
        if text is None:
            raise TargetNotFoundError(f"no file {rel!r} in the UDM{self._similar_files(rel)}")
        return text

    def _similar_files(self, rel: str) -> str:
        try:
            names = [p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file()]
        except OSError:
            return ""
        close = difflib.get_close_matches(rel, names, n=3, cutoff=0.5)
        return f" (did you mean: {', '.join(close)}?)" if close else ""

    def write(self, rel: str, text: str | None) -> None:
        """Set the file's new text (None deletes it)."""
        rel = check_relpath(rel)
        self.read(rel)
        self.current[rel] = text

    def text(self, rel: str) -> str:
        """The file's current text in edit form: no byte-order mark, LF line ends (see `edit_form`)."""
        text = self.require(rel)
        cached = self._edit.get(rel)
        if cached is None or cached[0] is not text:
            cached = (text, edit_form(text))
            self._edit[rel] = cached
        return cached[1]

    def put(self, rel: str, text: str) -> None:
        """Set the file's new text from its edit form, restoring the old text's BOM and CRLF line ends."""
        rel = check_relpath(rel)
        self.write(rel, disk_form(text, self.read(rel)))

    def doc(self, rel: str) -> Document:
        """The parsed Markdown document of the file's current text in edit form (cached per text)."""
        text = self.text(rel)
        cached = self._docs.get(rel)
        if cached is None or cached[0] is not text:
            cached = (text, cached_parse(text, rel, self.id_patterns, self.data_sections))
            self._docs[rel] = cached
        return cached[1]

    def changed(self) -> dict[str, tuple[str | None, str | None]]:
        """Files whose text differs from disk: path -> (before, after)."""
        return {p: (self.original[p], t) for p, t in self.current.items() if t != self.original.get(p)}


@dataclass
class OpReport:
    """What one operation did (or why it failed)."""

    index: int
    op: str
    file: str
    status: Literal["applied", "unchanged", "error", "not_run"] = "not_run"
    target: str = ""
    message: str = ""
    expect: str | None = None
    added: int = 0
    removed: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


_PROBE = "# udm-probe-0f3c9a"


def _check_closed(fragment: str) -> None:
    """Refuse Markdown that ends inside a fence or an HTML block: it would swallow what follows it."""
    if not fragment.strip():
        return
    body = ensure_newline(fragment)
    # A heading after a blank line is a heading unless something still open swallows it.
    probe = parse_document(f"{body}\n{_PROBE}\n")
    for b in probe.blocks:
        if b.content_end == b.end:
            raise PatchError(
                f"the content's code fence at its line {b.start + 1} ({b.fence.strip()}) is never closed; "
                f"end it with a {b.fence.strip()} line, or everything after it would become code"
            )
    at = len(split_lines(body)) + 1
    if not probe.sections or probe.sections[-1].heading_start != at:
        raise PatchError(
            "the content ends inside an HTML block or comment that is never closed (such as <!--, <pre>, "
            "<script>, <style> or <textarea>); close it, or everything after it would become part of it"
        )


def _fragment(content: str, fmt: bool) -> str:
    raw = ensure_newline(content.strip("\n"))
    _check_closed(raw)
    if not fmt:
        return raw.lstrip("\n")
    text = format_markdown_fragment(content)
    _check_closed(text)
    return text.lstrip("\n")


def _blank(line: str) -> bool:
    return not line.strip()


def _insert(
    lines: list[str], at: int, fragment: str, *, join_above: bool = False, join_below: bool = False
) -> list[str]:
    """Insert a Markdown fragment at line `at`, separated from its neighbours by one blank line.

    `join_above` / `join_below`: no blank line on that side (the fragment continues a tight list there).
    """
    if not fragment:
        return lines
    before = lines[:at]
    if before and not before[-1].endswith("\n"):
        before[-1] += "\n"
    piece = fragment
    if before and not _blank(before[-1]) and not join_above:
        piece = "\n" + piece
    if at < len(lines) and not _blank(lines[at]) and not join_below:
        piece += "\n"
    return [*before, *split_lines(piece), *lines[at:]]


def _refuse_swallowing(new: list[str], start: int, line: int, end: int, what: str) -> None:
    """Refuse an insertion after which `line` (or the first non-blank line from it) no longer starts a
    top-level block of new[start:end]: an indented block right after a list item becomes part of it."""
    while line < end and _blank(new[line]):
        line += 1
    if line >= end or not new[line].startswith((" ", "\t")):
        return
    if not starts_a_block("".join(new[start:end]), line - start):
        raise PatchError(
            f"{what} (line {line + 1}: {new[line].strip()[:40]!r}) would become part of the list item "
            "before it, because it is indented; remove that indentation, or end the list with a line "
            "that is not part of it"
        )


def _in_style(
    fragment: str, doc: Document, sec: Section, *, above: int | None = None, below: int | None = None
) -> tuple[str, bool, bool]:
    """The fragment's lists in the style of the section's (or else the document's) lists.

    `above`: the fragment goes right after line `above - 1`; if a list of the section ends there, the
    fragment's first list continues it. `below`: the fragment goes right before line `below`; if a
    list of the section starts there, the fragment's last list runs into it. Returns the fragment and
    whether it joins the list above / below without a blank line (to keep a tight list tight).
    """
    if not needs_list_style(fragment):
        return fragment, False, False
    offset = sec.heading_end
    styles = read_list_styles("".join(doc.lines[offset : sec.own_end]))
    if any(kind not in styles.by_kind for kind in needs_list_style(fragment)):
        styles.fill_from(read_list_styles("".join(doc.lines)))
    after = styles.trailing
    if after is None or above is None or _last_content(doc.lines, offset, offset + after.end) != above:
        after = None
    before = styles.leading
    if before is None or below is None or offset + before.start != below:
        before = None
    return restyle_lists(fragment, styles, after=after, before=before)


def _last_content(lines: list[str], start: int, end: int) -> int:
    """The line after the last non-blank line in [start, end) (start when all are blank)."""
    k = end
    while k > start and _blank(lines[k - 1]):
        k -= 1
    return k


def _relevel(fragment: str, level: int) -> str:
    """Shift the fragment's headings so its first heading has `level` (setext headings become ATX)."""
    doc = parse_document(fragment)
    if not doc.sections:
        raise PatchError("the section content does not start with a heading")
    shift = level - doc.sections[0].level
    lines = list(doc.lines)
    for sec in reversed(doc.sections):
        new_level = max(1, min(6, sec.level + shift))
        m = _ATX_LINE.match(lines[sec.heading_start])
        if m and sec.heading_end == sec.heading_start + 1:
            if shift:
                lines[sec.heading_start] = (
                    f"{m['lead']}{'#' * new_level}{m['gap']}{m['title']}{m['close'] or ''}{m['tail']}"
                )
        else:
            lines[sec.heading_start : sec.heading_end] = [f"{'#' * new_level} {sec.title}\n"]
    return "".join(lines)


def _refuse_duplicate_heading(doc: Document, new_text: str, title: str, level: int) -> None:
    """An inserted heading must not repeat a sibling's: a retried insert would otherwise duplicate it."""
    after = parse_document(new_text, doc.path)
    paths = [s.path for s in after.sections if s.title == title and s.level == level]
    dup = [p for p in set(paths) if paths.count(p) > 1]
    if dup:
        first = next((s for s in doc.sections if s.path == dup[0]), None)
        where = f" (line {first.start + 1})" if first else ""
        raise PatchError(
            f"a section '{dup[0]}' already exists{where}; replace or rename it instead of inserting a second one"
        )


def _hash_section(doc: Document, sec: Section) -> str:
    return sha256_text(section_text(doc, sec))


def _similar_sections(doc: Document, identifier: str) -> list[str]:
    wanted = identifier.lstrip("# ").casefold()
    names: dict[str, Section] = {}
    for s in doc.sections:
        names.setdefault(s.title, s)
        for ident in s.ids:
            names.setdefault(ident, s)
    # Names that contain what was asked for first (a bare 'T001'), then spelling neighbours.
    picked = [n for n in names if wanted and wanted in n.casefold()]
    picked += [
        n
        for n in difflib.get_close_matches(identifier.lstrip("# "), list(names), n=5, cutoff=0.55)
        if n not in picked
    ]
    seen: list[Section] = []
    for n in picked:
        if names[n] not in seen:
            seen.append(names[n])
    return [f"{s.path} (line {s.start + 1})" for s in seen[:6]]


def _section(doc: Document, identifier: str) -> Section:
    try:
        return find_section(doc, identifier)
    except AmbiguousTargetError as exc:
        raise AmbiguousTargetError(f"{exc}; candidates: {'; '.join(exc.candidates)}", exc.candidates) from exc
    except TargetNotFoundError as exc:
        similar = _similar_sections(doc, identifier)
        hint = f"; candidates: {'; '.join(similar)}" if similar else ""
        raise TargetNotFoundError(f"{exc}{hint}") from exc


def _block(doc: Document, sec: Section | None, selector: int | str | None, kind: str) -> Block:
    try:
        found = find_block(doc, sec, selector)
    except AmbiguousTargetError as exc:
        raise AmbiguousTargetError(f"{exc}; candidates: {'; '.join(exc.candidates)}", exc.candidates) from exc
    if kind == "yaml" and found.lang not in ("yaml", "yml", "verify"):
        raise TargetNotFoundError(
            f"block at line {found.start + 1} of {doc.path} is '{found.lang}', not YAML"
        )
    if kind == "json" and found.lang not in ("json", "json5"):
        raise TargetNotFoundError(
            f"block at line {found.start + 1} of {doc.path} is '{found.lang}', not JSON"
        )
    return found


_LIST_MARKER = re.compile(r"[-*+]|\d{1,9}[.)]")


def _content_prefix(doc: Document, block: Block) -> str:
    """What each content line of the block starts with: its fence's indent and container markers.

    A fence inside a block quote or list item (`> ```yaml`, `- ```yaml`) has content lines that
    repeat the quote markers and indent under the list marker; a line without them would end the
    container and break the file.
    """
    opening = doc.lines[block.start]
    lead = opening[: opening.find(block.fence)] if block.fence in opening else " " * block.indent
    return _LIST_MARKER.sub(lambda m: " " * len(m.group()), lead.replace("\t", "    "))


def _prefixed(text: str, prefix: str) -> str:
    if not prefix:
        return text
    blank = prefix.rstrip()
    return "".join(prefix + ln if ln.strip() else blank + ln.lstrip(" \t") for ln in split_lines(text))


def _replace_block_content(doc: Document, block: Block, new_text: str) -> str:
    lines = doc.lines
    original = "".join(lines[block.content_start : block.content_end])
    new_text = ensure_newline(new_text)
    prefix = _content_prefix(doc, block)
    # A CRLF block in a file that mixes line ends was not turned to LF with the file: give the
    # block's CRLF back here, so only the edited lines differ.
    roundtrip = disk_form(_prefixed(block.text, prefix), original)
    new_body = merge_minimal(original, roundtrip, disk_form(_prefixed(new_text, prefix), original))
    return "".join([*lines[: block.content_start], new_body, *lines[block.content_end :]])


class _Applier:
    """Applies one operation to the workspace; returns (target description, precondition hash)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    # -- section operations -----------------------------------------------------------------------

    def _md(self, rel: str) -> Document:
        if not rel.lower().endswith(self.ws.markdown_suffixes):
            raise PatchError(
                f"{rel} is not a Markdown page; section operations need one of "
                f"{', '.join(self.ws.markdown_suffixes)} (the markdown_suffixes setting)"
            )
        return self.ws.doc(rel)

    def section_op(self, op: Any, expect_check: Callable[[str, str], None]) -> str:
        """Apply one of the seven section operations; returns the target's description."""
        doc = self._md(op.file)
        sec = _section(doc, op.section)
        expect_check(_hash_section(doc, sec), f"section '{sec.path}'")
        lines = list(doc.lines)
        kind = op.op
        if kind == "replace_section":
            end = sec.own_end if op.own_only else sec.end
            fragment, _, _ = _in_style(_fragment(op.content, op.format), doc, sec)
            if op.with_heading:
                if fragment and not parse_document(fragment).sections:
                    raise PatchError("with_heading is true, so content must start with a heading")
                if fragment and parse_document(fragment).sections[0].start != 0:
                    raise PatchError("with_heading is true, so content must start with a heading")
                tail = lines[_last_content(lines, sec.start, end) : end]
                new = [*lines[: sec.start], *split_lines(fragment), *tail, *lines[end:]]
            else:
                body_start = sec.heading_end
                first = body_start
                while first < end and _blank(lines[first]):
                    first += 1
                if first == end:
                    # An empty body: one blank line after the heading, the old blank lines after it.
                    lead = ["\n"] if fragment else []
                    tail = lines[body_start:end] or (["\n"] if fragment and end < len(lines) else [])
                else:
                    # Keep the body's own leading and trailing blank lines; only its content changes.
                    lead = lines[body_start:first]
                    tail = lines[_last_content(lines, body_start, end) : end]
                new = [*lines[:body_start], *lead, *split_lines(fragment), *tail, *lines[end:]]
        elif kind == "append_to_section":
            at = max(_last_content(lines, sec.heading_end, sec.own_end), sec.heading_end)
            piece, join, _ = _in_style(_fragment(op.content, op.format), doc, sec, above=at)
            new = _insert(lines, at, piece, join_above=join)
            _refuse_swallowing(
                new, sec.heading_end, at, at + len(new) - len(lines), "the content's first line"
            )
        elif kind == "prepend_to_section":
            at = sec.heading_end
            while at < sec.own_end and _blank(lines[at]):
                at += 1
            piece, _, join = _in_style(_fragment(op.content, op.format), doc, sec, below=at)
            new = _insert(lines, at, piece, join_below=join)
            grown = len(new) - len(lines)
            _refuse_swallowing(
                new, at, at + grown, sec.own_end + grown, "the section's first line after the content"
            )
        elif kind == "insert_section":
            level = op.level or sec.level
            if op.heading is not None:
                if "\n" in op.heading.strip():
                    raise PatchError("heading must be one line")
                raw = f"{'#' * level} {op.heading.strip()}\n\n{op.content}"
            else:
                raw = op.content
            fragment = _in_style(_relevel(_fragment(raw, op.format), level), doc, sec)[0]
            at = sec.start if op.position == "before" else sec.end
            new = _insert(lines, at, fragment)
            _refuse_duplicate_heading(doc, "".join(new), parse_document(fragment).sections[0].title, level)
        elif kind == "delete_section":
            new = [*lines[: sec.start], *lines[sec.end :]]
        elif kind == "rename_heading":
            title = op.to.strip()
            if "\n" in title:
                raise PatchError("the new heading text must be one line")
            line = lines[sec.heading_start]
            m = _ATX_LINE.match(line)
            if m and sec.heading_end == sec.heading_start + 1:
                lines[sec.heading_start] = (
                    f"{m['lead']}{m['hashes']}{m['gap']}{title}{m['close'] or ''}{m['tail']}"
                )
            else:
                indent = line[: len(line) - len(line.lstrip())]
                ending = line[len(line.rstrip("\r\n")) :]
                lines[sec.heading_start] = f"{indent}{title}{ending}"
            new = lines
        elif kind == "move_section":
            new = self._move(doc, sec, op)
        else:  # pragma: no cover - the model's discriminator lists every kind handled above
            raise PatchError(f"unknown section operation {kind!r}")
        self.ws.put(op.file, "".join(new))
        return f"section '{sec.path}' (line {sec.start + 1})"

    def _move(self, doc: Document, sec: Section, op: P.MoveSection) -> list[str]:
        lines = list(doc.lines)
        dest_probe = _section(doc, op.to)
        if sec.start <= dest_probe.start < sec.end:
            raise PatchError(f"cannot move section '{sec.path}' into itself ('{dest_probe.path}')")
        moved = "".join(lines[sec.start : _last_content(lines, sec.start, sec.end)])
        if op.level is not None and op.level != sec.level:
            moved = _relevel(moved, op.level)
        rest = "".join([*lines[: sec.start], *lines[sec.end :]])
        rest_doc = parse_document(rest, doc.path, self.ws.id_patterns)
        dest = _section(rest_doc, op.to)
        at = dest.start if op.position == "before" else dest.end
        return _insert(list(rest_doc.lines), at, ensure_newline(moved))

    # -- text and structured operations -----------------------------------------------------------

    def replace_text(self, op: P.ReplaceText, expect_check: Callable[[str, str], None]) -> str:
        """Replace exact text that must occur exactly `count` times."""
        text = self.ws.text(op.file)
        start, end, where = 0, len(text), op.file
        if op.section is not None:
            doc = self._md(op.file)
            sec = _section(doc, op.section)
            start = sum(len(ln) for ln in doc.lines[: sec.start])
            end = start + len(section_text(doc, sec))
            where = f"section '{sec.path}' of {op.file}"
        scope = text[start:end]
        positions = [m.start() for m in re.finditer(re.escape(op.old), scope)]
        # Non-overlapping occurrences, as str.replace counts them.
        found = scope.count(op.old)
        matched_lines = sorted({text.count("\n", 0, start + p) for p in positions})
        lines = split_lines(text)
        expect_check(
            sha256_text("".join(lines[i] for i in matched_lines if i < len(lines))),
            f"the lines holding {op.old!r} in {where}",
        )
        if found != op.count:
            at = ", ".join(str(i + 1) for i in matched_lines[:10]) or "none"
            raise TargetNotFoundError(
                f"{op.old!r} occurs {found} time(s) in {where}, expected {op.count} (lines: {at})"
            )
        self.ws.put(op.file, text[:start] + scope.replace(op.old, op.new) + text[end:])
        return f"{found} occurrence(s) in {where} (lines {', '.join(str(i + 1) for i in matched_lines[:10])})"

    def key_op(self, op: Any, expect_check: Callable[[str, str], None]) -> str:
        """Set, delete or append by key path in a YAML/JSON file or a fenced block."""
        action = op.op.split("_", 1)[0]
        family = "yaml" if "yaml" in op.op else "json"
        suffix = Path(op.file).suffix.lower()
        value = getattr(op, "value", None)
        if suffix in _STRUCTURED:
            fmt = _STRUCTURED[suffix]
            if (fmt == "yaml") != (family == "yaml"):
                raise PatchError(f"{op.op} cannot edit {op.file}: it is a {fmt.upper()} file")
            if op.section is not None or op.block is not None:
                raise PatchError(
                    f"{op.file} is a {fmt.upper()} file; 'section' and 'block' apply to Markdown files"
                )
            text = self.ws.text(op.file)
            expect_check(sha256_text(text), f"file {op.file}")
            try:
                self.ws.put(op.file, edit_text(text, fmt, action, op.key, value))
            except DocumentError as exc:
                raise DocumentError(f"{op.file}: {exc}") from exc
            return f"key '{op.key}' of {op.file}"
        doc = self._md(op.file)
        sec = _section(doc, op.section) if op.section is not None else None
        if sec is None and op.block is None:
            raise PatchError(
                f"{op.op} on a Markdown file needs 'section' and/or 'block' to choose the fenced block"
            )
        block = _block(doc, sec, op.block, family)
        where = f"block at line {block.start + 1}" + (
            f" in section '{doc.section(block.section).path}'" if block.section is not None else ""
        )
        expect_check(sha256_text(block.text), where)
        fmt = "yaml" if family == "yaml" else ("json5" if block.lang == "json5" else "json")
        try:
            new_text = edit_text(block.text, fmt, action, op.key, value)
        except DocumentError as exc:
            raise DocumentError(f"{op.file} {where}: {exc}") from exc
        except TargetError as exc:
            raise type(exc)(f"{op.file} {where}: {exc}") from exc
        self.ws.put(op.file, _replace_block_content(doc, block, new_text))
        return f"key '{op.key}' of the {where}"

    def front_matter(self, op: P.SetFrontMatter, expect_check: Callable[[str, str], None]) -> str:
        """Set or delete a front-matter key (creating the front matter when absent)."""
        doc = self._md(op.file)
        lines = list(doc.lines)
        rng = doc.front_matter_range
        if rng is None and lines and lines[0].rstrip("\r\n") == "---":
            raise DocumentError(f"{op.file}: its front matter is not closed by '---'")
        body = "".join(lines[rng[0] + 1 : rng[1] - 1]) if rng else ""
        expect_check(sha256_text(body), f"the front matter of {op.file}")
        if op.delete:
            new_body = edit_text(body, "yaml", "delete", op.key)
        else:
            new_body = edit_text(body, "yaml", "set", op.key, op.value)
        if rng:
            new = [*lines[: rng[0] + 1], new_body, *lines[rng[1] - 1 :]]
        else:
            new = [
                "---\n",
                ensure_newline(new_body),
                "---\n",
                *(["\n"] if lines and not _blank(lines[0]) else []),
                *lines,
            ]
        self.ws.put(op.file, "".join(new))
        return f"front matter key '{op.key}' of {op.file}"

    def code_block(self, op: P.ReplaceCodeBlock, expect_check: Callable[[str, str], None]) -> str:
        """Replace a fenced block's content, keeping its fence and info string."""
        doc = self._md(op.file)
        sec = _section(doc, op.section) if op.section is not None else None
        if sec is None and op.block is None:
            raise PatchError("replace_code_block needs 'section' and/or 'block'")
        if op.block is None and sec is not None:
            own = [b for b in doc.blocks if b.section == sec.index]
            if not own:
                raise TargetNotFoundError(f"no fenced code block in {op.file} section '{sec.path}'")
            try:
                block = own[0] if len(own) == 1 else _block(doc, sec, None, "any")
            except TargetNotFoundError:
                # Several blocks and none of them data: the data-block default cannot choose.
                raise AmbiguousTargetError(
                    f"{len(own)} code blocks in {op.file} section '{sec.path}'; name one by index or ID",
                    [f"block {k} '{b.lang or 'code'}' (line {b.start + 1})" for k, b in enumerate(own)],
                ) from None
        else:
            block = _block(doc, sec, op.block, "any")
        expect_check(sha256_text(block.text), f"block at line {block.start + 1} of {op.file}")
        self.ws.put(op.file, _replace_block_content(doc, block, op.content))
        return f"{block.lang or 'code'} block at line {block.start + 1} of {op.file}"

    # -- file operations ---------------------------------------------------------------------------

    def file_op(self, op: Any, expect_check: Callable[[str, str], None]) -> str:
        """Create, rename or delete a file."""
        rel = check_relpath(op.file)
        if op.op == "create_file":
            if self.ws.read(rel) is not None:
                raise PatchError(f"cannot create {rel}: it exists")
            expect_check(sha256_text(""), f"absence of {rel}")
            content = op.content
            if rel.lower().endswith(MARKDOWN_SUFFIXES):
                _check_closed(content)
                if op.format:
                    content = format_markdown_fragment(content)
            self.ws.write(rel, content)
            return f"new file {rel}"
        text = self.ws.require(rel)
        expect_check(sha256_text(text), f"file {rel}")
        if op.op == "delete_file":
            self.ws.write(rel, None)
            return f"file {rel}"
        dest = check_relpath(op.to)
        if dest == rel:
            raise PatchError(f"rename_file: {rel} and its destination are the same")
        if self.ws.read(dest) is not None:
            raise PatchError(f"cannot rename {rel} to {dest}: {dest} exists")
        self.ws.write(dest, text)
        self.ws.write(rel, None)
        return f"{rel} -> {dest}"


_SECTION_OPS = {
    "replace_section",
    "append_to_section",
    "prepend_to_section",
    "insert_section",
    "delete_section",
    "rename_heading",
    "move_section",
}


def _requalify(exc: UdmError, prefix: str) -> UdmError:
    message = f"{prefix}: {exc}"
    if isinstance(exc, AmbiguousTargetError):
        return AmbiguousTargetError(message, exc.candidates)
    try:
        return type(exc)(message)
    except TypeError:
        return PatchError(message)


def apply_operations(
    patch: P.Patch, ws: Workspace, *, check_expect: bool = True, reports: list[OpReport] | None = None
) -> tuple[list[OpReport], list[str | None]]:
    """Apply every operation in order to `ws`; returns the reports and each target's precondition hash.

    With `check_expect`, an operation whose `expect` differs from its target's hash raises ConflictError
    naming the target. Any failure raises (an UdmError prefixed with `operations[i] (op)`), after
    marking that operation's report as the error; the workspace is then partly edited and must be
    thrown away. Pass `reports` to keep the per-operation reports of a failed run.
    """
    applier = _Applier(ws)
    if reports is None:
        reports = []
    reports[:] = [OpReport(index=i, op=op.op, file=op.file) for i, op in enumerate(patch.operations)]
    hashes: list[str | None] = [None] * len(patch.operations)
    for i, op in enumerate(patch.operations):
        report = reports[i]

        def expect_check(current: str, target: str, i: int = i, op: Any = op) -> None:
            """Record the target's hash; with check_expect, a different planned hash is a conflict."""
            hashes[i] = current
            reports[i].expect = current
            if check_expect and op.expect is not None and op.expect != current:
                raise ConflictError(
                    f"{target} of {op.file} changed since the patch was planned "
                    f"(expected {op.expect[:19]}, found {current[:19]})"
                )

        before = ws.read(op.file) if op.op != "create_file" else None
        try:
            if op.op in _SECTION_OPS:
                target = applier.section_op(op, expect_check)
            elif op.op == "replace_text":
                target = applier.replace_text(op, expect_check)
            elif op.op == "set_front_matter":
                target = applier.front_matter(op, expect_check)
            elif op.op == "replace_code_block":
                target = applier.code_block(op, expect_check)
            elif op.op in ("create_file", "rename_file", "delete_file"):
                target = applier.file_op(op, expect_check)
            else:
                target = applier.key_op(op, expect_check)
        except UdmError as exc:
            report.status = "error"
            report.message = str(exc)
            raise _requalify(exc, f"operations[{i}] ({op.op}) on {op.file}") from exc
        after = ws.read(op.file)
        report.target = target
        if before == after and op.op not in ("rename_file", "create_file"):
            report.status = "unchanged"
            report.message = "already as asked; nothing to change"
        else:
            report.status = "applied"
            report.added, report.removed = changed_line_count(before, after)
    return reports, hashes
