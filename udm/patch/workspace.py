"""The files a patch touches, read lazily from the UDM root and edited in memory; the parse cache."""

from __future__ import annotations

import difflib
import posixpath
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from udm.errors import DocumentError, InvalidPathError, PathOutsideError, TargetNotFoundError
from udm.index import MARKDOWN_SUFFIXES as PAGE_SUFFIXES
from udm.markdown import Document, parse_document
from udm.patch.splice import disk_form, edit_form, sha256_text

if TYPE_CHECKING:
    from udm.site import Site

__all__ = ["MARKDOWN_SUFFIXES", "Workspace", "cached_parse", "check_relpath"]

MARKDOWN_SUFFIXES = (".md", ".markdown")


_CacheKey = tuple[
    str,
    str,
    tuple[str, ...] | None,
    tuple[str, ...],
    tuple[tuple[str, str], ...] | None,
    tuple[str, ...],
    bool,
    bool,
    str,
]
_CACHE: OrderedDict[_CacheKey, Document] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 64


def cached_parse(
    text: str,
    path: str,
    id_patterns: list[str] | None = None,
    data_sections: tuple[str, ...] = (),
    shortcodes: tuple[tuple[str, str], ...] | None = None,
    indented: tuple[str, ...] = (),
    autorefs: bool = False,
    roles: bool = False,
    liquid: str = "",
) -> Document:
    """parse_document, remembered for the last few texts: a plan and its commit parse the same files."""
    ids = tuple(id_patterns) if id_patterns is not None else None
    key = (path, sha256_text(text), ids, data_sections, shortcodes, indented, autorefs, roles, liquid)
    with _CACHE_LOCK:
        doc = _CACHE.get(key)
        if doc is not None:
            _CACHE.move_to_end(key)
            return doc
    doc = parse_document(
        text,
        path,
        id_patterns,
        data_sections=data_sections,
        shortcodes=shortcodes,
        indented=indented,
        autorefs=autorefs,
        roles=roles,
        liquid=liquid,
    )
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
    # Markdown pages (.mdx among them), which sections hold data blocks, which Hugo shortcodes
    # hold no Markdown (the site's) and, on a MkDocs site, which indented blocks hold Markdown.
    markdown_suffixes: tuple[str, ...] = PAGE_SUFFIXES
    data_sections: tuple[str, ...] = ()
    shortcodes: tuple[tuple[str, str], ...] | None = None
    site: Site | None = None
    # How large a page beside the manual is read for its anchors (the manual's `max_file_bytes`, its
    # default here).
    page_bytes: int = 4_000_000
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
            cached = (text, self.parse(text, rel))
            self._docs[rel] = cached
        return cached[1]

    def parse(self, text: str, rel: str) -> Document:
        """A text of the file `rel` parsed as the index parses that page (cached per text)."""
        site = self.site
        indented, crossing = (site.indented_in(rel), site.crossing_in(rel)) if site else ((), False)
        roles = bool(site.labels) and site.publishes(rel) if site else False
        liquid = site.liquid_in(rel) if site else ""
        return cached_parse(
            text,
            rel,
            self.id_patterns,
            self.data_sections,
            self.shortcodes,
            indented,
            crossing,
            roles,
            liquid,
        )

    def changed(self) -> dict[str, tuple[str | None, str | None]]:
        """Files whose text differs from disk: path -> (before, after)."""
        return {p: (self.original[p], t) for p, t in self.current.items() if t != self.original.get(p)}
