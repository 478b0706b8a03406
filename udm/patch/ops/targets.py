"""Finding an operation's target in a Markdown page (with candidates when it is missing), and block splices."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from udm.errors import AmbiguousTargetError, PatchError, TargetNotFoundError
from udm.markdown import Block, Document, Section, find_block, find_section, section_text
from udm.patch.splice import disk_form, ensure_newline, merge_minimal, sha256_text, split_lines
from udm.patch.workspace import Workspace

__all__ = [
    "ExpectCheck",
    "find_block_of_kind",
    "find_section_hinted",
    "hash_section",
    "joint_hash",
    "markdown_doc",
    "replace_block_content",
]

# Called by an operation with its target's current hash and a description of the target: records the
# hash as the operation's precondition and raises ConflictError when it differs from the planned one.
ExpectCheck = Callable[[str, str], None]


def markdown_doc(ws: Workspace, rel: str) -> Document:
    """The parsed page `rel`; PatchError when its suffix is not one of the manual's Markdown suffixes."""
    if not rel.lower().endswith(ws.markdown_suffixes):
        raise PatchError(
            f"{rel} is not a Markdown page; section operations need one of "
            f"{', '.join(ws.markdown_suffixes)} (the markdown_suffixes setting)"
        )
    return ws.doc(rel)


def hash_section(doc: Document, sec: Section) -> str:
    """The precondition hash of a section: the hash of its text, subsections included."""
    return sha256_text(section_text(doc, sec))


def joint_hash(*hashes: str | None) -> str:
    """One precondition hash of several things an operation depends on (None: a file that does not exist),
    so a change to any of them between plan and commit is a conflict, as a changed target is."""
    return sha256_text("\n".join(h or "absent" for h in hashes))


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


def find_section_hinted(doc: Document, identifier: str) -> Section:
    """The section `identifier` names; a not-found or ambiguous error lists the candidates."""
    try:
        return find_section(doc, identifier)
    except AmbiguousTargetError as exc:
        raise AmbiguousTargetError(f"{exc}; candidates: {'; '.join(exc.candidates)}", exc.candidates) from exc
    except TargetNotFoundError as exc:
        similar = _similar_sections(doc, identifier)
        hint = f"; candidates: {'; '.join(similar)}" if similar else ""
        raise TargetNotFoundError(f"{exc}{hint}") from exc


def find_block_of_kind(doc: Document, sec: Section | None, selector: int | str | None, kind: str) -> Block:
    """The fenced block chosen by section and selector; `kind` yaml or json refuses a block of another language."""
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


def replace_block_content(doc: Document, block: Block, new_text: str) -> str:
    """The page's text with the block's content replaced, changing only the lines that differ."""
    lines = doc.lines
    original = "".join(lines[block.content_start : block.content_end])
    new_text = ensure_newline(new_text)
    prefix = _content_prefix(doc, block)
    # A CRLF block in a file that mixes line ends was not turned to LF with the file: give the
    # block's CRLF back here, so only the edited lines differ.
    roundtrip = disk_form(_prefixed(block.text, prefix), original)
    new_body = merge_minimal(original, roundtrip, disk_form(_prefixed(new_text, prefix), original))
    return "".join([*lines[: block.content_start], new_body, *lines[block.content_end :]])
