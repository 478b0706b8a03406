"""A small SQLite sidecar of the index (ID definitions, section ranges, file stats) for fast processes.

`udm query id X` as a fresh process cannot afford importing DuckDB and the CLI framework. Each
refresh mirrors the definitions of the changed files, and the stat of every file, into
`<state>/lookup.sqlite`; `lookup_definitions()` answers from it with the standard library alone,
after checking every file's stat against the mirror — if anything moved it returns None and the
caller takes the full path, which refreshes the index. This module imports only the standard library.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import sys

from udm.shown import utf8_name

TYPE_CHECKING = False

if TYPE_CHECKING:  # the fast CLI path imports this module: keep its runtime imports minimal
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any

    from udm.config import Settings

__all__ = [
    "LOOKUP_NAME",
    "MARKDOWN_LIKE",
    "MARKDOWN_SUFFIXES",
    "excluded_folders",
    "lookup_definitions",
    "manual_pages",
    "scan_markdown",
    "write_lookup",
]

LOOKUP_NAME = "lookup.sqlite"
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")  # the default of settings.markdown_suffixes
# Suffixes of Markdown dialects: such a file outside the configured suffixes is listed as skipped.
MARKDOWN_LIKE = (
    ".md",
    ".markdown",
    ".mdx",
    ".mdown",
    ".mkd",
    ".mkdn",
    ".mdwn",
    ".mdtxt",
    ".mdtext",
    ".rmd",
    ".qmd",
)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER)",
    "CREATE TABLE IF NOT EXISTS defs (id TEXT, file TEXT, line INTEGER, how TEXT, section INTEGER, "
    "section_path TEXT, start_line INTEGER, end_line INTEGER)",
    "CREATE INDEX IF NOT EXISTS defs_id ON defs (id)",
    "CREATE INDEX IF NOT EXISTS defs_file ON defs (file)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
)


def scan_markdown(
    root: str | Path,
    exclude: Iterable[str | Path] = (),
    dirs: list[str] | None = None,
    suffixes: tuple[str, ...] = MARKDOWN_SUFFIXES,
    skipped: list[tuple[str, str]] | None = None,
) -> dict[str, tuple[int, int]]:
    """Every Markdown file under `root` (relative posix path -> (size, mtime_ns)), hidden dirs skipped.

    Symbolic links to directories are not followed, and a linked file counts only when its target
    is inside `root` too.

    `dirs`, when given, receives every directory visited (the index watches them); `skipped`
    receives (path, reason) of each Markdown-like file left out (a link out of the root, a
    suffix not in `suffixes`).
    """
    out: dict[str, tuple[int, int]] = {}
    skip = {str(p) for p in exclude}
    stack = [str(root)]
    base = len(str(root)) + 1
    real_root = os.path.realpath(root)
    while stack:
        current = stack.pop()
        if dirs is not None:
            dirs.append(current)
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if not utf8_name(name):
                # Undecodable bytes (kept as lone surrogates) can be neither stored nor printed, nor
                # linked to from a page: the file, or the folder and all below it, is left out, said.
                if skipped is not None and (name.lower().endswith(MARKDOWN_LIKE) or entry.is_dir()):
                    from udm.guard import escape_name  # loaded only for such a name: the scan stays light

                    what = "folder" if entry.is_dir() else "file"
                    # The whole path is listed, however long: it says which file was left out.
                    shown = escape_name(_rel(entry.path, base), limit=sys.maxsize)
                    skipped.append((shown, f"skipped: the {what} name is not valid UTF-8"))
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.path not in skip:
                        stack.append(entry.path)
                elif name.lower().endswith(suffixes) and entry.is_file():
                    if entry.is_symlink() and not _inside(os.path.realpath(entry.path), real_root):
                        # A link out of the manual would publish that file through every query tool.
                        if skipped is not None:
                            skipped.append(
                                (_rel(entry.path, base), "skipped: a symbolic link out of the root")
                            )
                        continue
                    st = entry.stat()
                    out[entry.path[base:].replace(os.sep, "/")] = (st.st_size, st.st_mtime_ns)
                elif skipped is not None and name.lower().endswith(suffixes):
                    # A page's suffix on something that is not a readable file: the entry says why.
                    skipped.append((_rel(entry.path, base), f"skipped: {_not_a_file(entry)}"))
                elif skipped is not None and name.lower().endswith(MARKDOWN_LIKE):
                    suffix = "." + name.rsplit(".", 1)[-1]
                    skipped.append(
                        (_rel(entry.path, base), f"skipped: suffix {suffix} is not in markdown_suffixes")
                    )
            except OSError:
                # A link that loops (`loop.md -> loop.md`): is_file() itself fails; said, like the rest.
                if skipped is not None and name.lower().endswith(suffixes):
                    skipped.append((_rel(entry.path, base), f"skipped: {_not_a_file(entry)}"))
                continue
    return out


def excluded_folders(settings: Settings) -> list[Path]:
    """The folders under the manual's root that are never read as pages (the engine's state)."""
    return [settings.state_path]


def manual_pages(settings: Settings) -> list[str]:
    """The manual's pages as the index sees them, sorted: its `markdown_suffixes`, its folders left out."""
    found = scan_markdown(
        settings.udm_root, excluded_folders(settings), suffixes=tuple(settings.markdown_suffixes)
    )
    return sorted(found)


def _not_a_file(entry: os.DirEntry[str]) -> str:
    """Why an entry named like a page is no file to read: a dangling link, a link to a folder, a pipe."""
    link = entry.is_symlink()
    try:
        mode = os.stat(entry.path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link that loops (it never reaches a file)"
        if link and exc.errno == errno.ENOENT:
            return "a symbolic link to nothing (its target does not exist)"
        return f"it cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        kind = "folder"
    else:
        kinds = ((stat.S_ISFIFO, "named pipe"), (stat.S_ISSOCK, "socket"))
        kind = next((word for test, word in kinds if test(mode)), "device")
    return f"{'a symbolic link to ' if link else ''}a {kind}, not a regular file"


def _rel(path: str, base: int) -> str:
    return path[base:].replace(os.sep, "/")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def write_lookup(
    state: Path,
    root: Path,
    *,
    full: bool,
    changed: list[str],
    disk: dict[str, tuple[int, int]],
    defs: list[tuple[Any, ...]],
    generation: int | None = None,
    restat: list[str] | None = None,
    suffixes: tuple[str, ...] = MARKDOWN_SUFFIXES,
) -> bool:
    """Mirror the definitions of `changed` files (all when `full`) and the stats of every file.

    With `restat` (a small refresh) only those files' stats are written and `changed` files gone from
    `disk` are dropped; that needs the mirror to be at `generation - 1`, else nothing is written and
    the answer is False (the caller then rewrites it whole).
    """
    con = sqlite3.connect(os.path.join(state, LOOKUP_NAME), timeout=30)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        # A cache: if it is ever lost or torn, readers fall back to the full path.
        con.execute("PRAGMA synchronous=OFF")
        for stmt in _SCHEMA:
            con.execute(stmt)
        with con:
            if restat is not None and not full:
                row = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
                if generation is None or row is None or row[0] != str(generation - 1):
                    return False
            if full:
                con.execute("DELETE FROM defs")
                con.execute("DELETE FROM files")
            else:
                con.executemany("DELETE FROM defs WHERE file = ?", [(p,) for p in changed])
                if restat is None:
                    known = {r[0] for r in con.execute("SELECT path FROM files")}
                    gone = known - set(disk)
                else:
                    gone = {p for p in changed if p not in disk}
                con.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in gone])
            con.executemany("INSERT INTO defs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", defs)
            stats = disk.items() if restat is None or full else ((p, disk[p]) for p in restat if p in disk)
            con.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?)", [(p, st[0], st[1]) for p, st in stats]
            )
            con.execute("INSERT OR REPLACE INTO meta VALUES ('root', ?)", (str(root),))
            # Readers scan with the suffixes the index used, so their file list compares equal.
            con.execute("INSERT OR REPLACE INTO meta VALUES ('suffixes', ?)", ("\n".join(suffixes),))
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('generation', ?)",
                ("" if generation is None else str(generation),),
            )
    finally:
        con.close()
    return True


def lookup_definitions(
    state: str | Path, root: str | Path, ident: str, exclude: Iterable[str | Path] = ()
) -> list[dict[str, Any]] | None:
    """Definitions of `ident` when the mirror matches the files on disk exactly; None otherwise."""
    path = os.path.join(state, LOOKUP_NAME)
    if not os.path.exists(path):
        return None
    try:
        # In a URI, '?' and '#' end the path and '%' escapes: "C# docs/state" opened (and created) "C".
        quoted = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
        con = sqlite3.connect(f"file:{quoted}?mode=ro", uri=True, timeout=2)
    except sqlite3.Error:
        return None
    try:
        meta = con.execute("SELECT value FROM meta WHERE key = 'root'").fetchone()
        if meta is None or meta[0] != str(root):
            return None
        row = con.execute("SELECT value FROM meta WHERE key = 'suffixes'").fetchone()
        suffixes = tuple(row[0].split("\n")) if row and row[0] else MARKDOWN_SUFFIXES
        indexed = {r[0]: (r[1], r[2]) for r in con.execute("SELECT path, size, mtime_ns FROM files")}
        if indexed != scan_markdown(root, exclude, suffixes=suffixes):
            return None
        rows = con.execute(
            "SELECT id, file, line, how, section, section_path, start_line, end_line FROM defs WHERE id = ? "
            "ORDER BY file, line",
            (ident,),
        ).fetchall()
    except sqlite3.Error:
        return None
    finally:
        con.close()
    names = ("id", "file", "line", "how", "section", "section_path", "start_line", "end_line")
    return [dict(zip(names, r, strict=True)) for r in rows]
