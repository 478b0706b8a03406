"""Checks a patch's results before commit: files parse, IDs stay unique, internal links still resolve."""

from __future__ import annotations

import bisect
import json
import posixpath
from collections import Counter
from pathlib import Path

from udm.datalimits import check_text
from udm.document import Document
from udm.errors import DocumentError, PatchError, UdmError
from udm.patch_apply import MARKDOWN_SUFFIXES, Workspace, cached_parse
from udm.splice import edit_form, line_opcodes

__all__ = ["ValidationFailedError", "validate_workspace"]


class ValidationFailedError(PatchError):
    """The patched files would break the manual; `problems` lists every finding."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("validation failed: " + "; ".join(problems))
        self.problems = problems


def _structured_error(path: str, text: str) -> str | None:
    suffix = Path(path).suffix.lower()
    try:
        if suffix in (".yaml", ".yml", ".json", ".json5"):
            check_text(text, "yaml" if suffix in (".yaml", ".yml") else suffix[1:])  # type: ignore[arg-type]
        if suffix in (".yaml", ".yml"):
            import yaml

            list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
        elif suffix == ".json":
            json.loads(text)
        elif suffix == ".json5":
            import json5

            json5.loads(text)
    except Exception as exc:  # every parser has its own error types; the message is what matters
        return f"{path}: does not parse as {suffix[1:].upper()}: {' '.join(str(exc).split())[:200]}"
    return None


def _block_errors(doc: Document) -> Counter[str]:
    # Keyed by the block's text, so a block that was broken before the patch does not block it.
    return Counter(b.text for b in doc.blocks if b.error)


def _anchors(doc: Document) -> set[str]:
    return {s.anchor for s in doc.sections}


class _Resolver:
    """Resolves link targets against the post-patch state of the workspace, then the disk."""

    def __init__(self, ws: Workspace, after: bool) -> None:
        self.ws = ws
        self.after = after
        self._docs: dict[str, Document | None] = {}

    def text(self, rel: str) -> str | None:
        """The file's text before or after the patch (None when absent)."""
        # Edit form: a byte-order mark would hide a first heading, and JSON parsers refuse it.
        if rel in self.ws.current:
            text = self.ws.current[rel] if self.after else self.ws.original[rel]
        else:
            try:
                text = self.ws.read(rel)
            except UdmError:
                return None
        return None if text is None else edit_form(text)

    def exists(self, rel: str) -> bool:
        """Whether the file exists before or after the patch."""
        if rel in self.ws.current:
            return self.text(rel) is not None
        try:
            real = self.ws.real_path(rel)
        except UdmError:
            return False
        return real.exists()

    def doc(self, rel: str) -> Document | None:
        """The parsed Markdown file (None when absent or not Markdown)."""
        if rel not in self._docs:
            text = self.text(rel) if rel.lower().endswith(MARKDOWN_SUFFIXES) else None
            self._docs[rel] = cached_parse(text, rel, self.ws.id_patterns) if text is not None else None
        return self._docs[rel]

    def broken(self, doc: Document) -> set[tuple[str, str]]:
        """(link target, reason) of every internal link of `doc` that does not resolve."""
        out: set[tuple[str, str]] = set()
        base = posixpath.dirname(doc.path)
        for link in doc.links:
            if link.kind == "anchor":
                if link.target[1:] and link.target[1:] not in _anchors(doc):
                    out.add((link.target, "no such heading in the file"))
                continue
            if link.kind != "internal":
                continue
            target, _, anchor = link.target.partition("#")
            target = target.split("?", 1)[0]
            if not target:
                continue
            rel = posixpath.normpath(posixpath.join(base, target))
            if rel.startswith("../") or rel == "..":
                continue  # outside the manual: not ours to check
            if not self.exists(rel):
                out.add((link.target, f"{rel} does not exist"))
                continue
            if anchor and rel.lower().endswith(MARKDOWN_SUFFIXES):
                other = doc if rel == doc.path else self.doc(rel)
                if other is not None and anchor not in _anchors(other):
                    out.add((link.target, f"no heading #{anchor} in {rel}"))
        return out


def _all_markdown(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.suffix.lower() in MARKDOWN_SUFFIXES and p.is_file() and not p.is_symlink()
    )


def _swallowed(path: str, old: Document, new: Document) -> list[str]:
    """Headings and ID definitions on lines the patch left alone that no longer count as such.

    A line that did not change but stopped being a heading (or defining its ID) was swallowed by
    something opened above it: an unclosed fence or HTML block, a fence closed early. Deleting or
    rewriting a section changes its lines, so it is not reported here.
    """
    equal = [(i1, i2, j1) for tag, i1, i2, j1, _ in line_opcodes(old.lines, new.lines) if tag == "equal"]
    starts = [e[0] for e in equal]

    def kept(line: int) -> int | None:
        """Where an unchanged old line sits in the new text (None when the patch changed it)."""
        k = bisect.bisect_right(starts, line) - 1
        if k >= 0 and line < equal[k][1]:
            return equal[k][2] + line - equal[k][0]
        return None

    problems: list[str] = []
    headings = {s.heading_start for s in new.sections}
    for sec in old.sections:
        unchanged = all(kept(k) is not None for k in range(sec.heading_start, sec.heading_end))
        if unchanged and kept(sec.heading_start) not in headings:
            problems.append(
                f"{path}: section '{sec.path}' (line {sec.heading_start + 1}) would vanish: its heading "
                "is unchanged but no longer a heading (an unclosed code fence or HTML block above it?)"
            )
    defined = {d.id for d in new.id_defs}
    for d in old.id_defs:
        if d.id not in defined and kept(d.line) is not None:
            problems.append(
                f"{path}: ID {d.id} (line {d.line + 1}) would no longer be defined although its line is "
                "unchanged (an unclosed code fence or HTML block above it?)"
            )
    return problems


def validate_workspace(ws: Workspace) -> None:
    """Raise ValidationFailedError if the workspace's changes would break the manual."""
    problems: list[str] = []
    changed = ws.changed()
    before_r, after_r = _Resolver(ws, after=False), _Resolver(ws, after=True)
    lost_files = {p for p, (_, after) in changed.items() if after is None}
    lost_anchors: dict[str, set[str]] = {}
    new_ids: dict[str, str] = {}
    for path, (before, after) in sorted(changed.items()):
        if after is None:
            continue
        before = None if before is None else edit_form(before)
        after = edit_form(after)
        if not path.lower().endswith(MARKDOWN_SUFFIXES):
            error = _structured_error(path, after)
            if error and (before is None or _structured_error(path, before) is None):
                problems.append(error)
            continue
        new_doc = after_r.doc(path)
        old_doc = before_r.doc(path) if before is not None else None
        assert new_doc is not None
        old_errors = _block_errors(old_doc) if old_doc else Counter()
        for block in new_doc.blocks:
            if block.error and old_errors[block.text] <= 0:
                problems.append(f"a {block.lang.upper()} block does not parse: {block.error}")
        if (
            new_doc.front_matter_range is None
            and new_doc.lines[:1] == ["---\n"]
            and old_doc
            and old_doc.front_matter_range
        ):
            problems.append(f"{path}: the front matter is no longer closed")
        for err in new_doc.errors:
            if "front matter" in err and not (old_doc and err in old_doc.errors):
                problems.append(err)
        # IDs: a definition that is new here must not exist twice in the file or anywhere else.
        old_counts = Counter(d.id for d in old_doc.id_defs) if old_doc else Counter()
        new_counts = Counter(d.id for d in new_doc.id_defs)
        for ident, n in new_counts.items():
            lines_of = [d.line + 1 for d in new_doc.id_defs if d.id == ident]
            if n > 1 and n > old_counts[ident]:
                problems.append(
                    f"{path}: ID {ident} would be defined {n} times (lines {', '.join(map(str, lines_of))})"
                )
            if old_counts[ident] == 0:
                new_ids[ident] = path
        if old_doc:
            problems += _swallowed(path, old_doc, new_doc)
        old_broken = before_r.broken(old_doc) if old_doc else set()
        for target, reason in sorted(after_r.broken(new_doc) - old_broken):
            problems.append(f"{path}: link to {target} would break ({reason})")
        if old_doc:
            gone = _anchors(old_doc) - _anchors(new_doc)
            if gone:
                lost_anchors[path] = gone
    if new_ids or lost_files or lost_anchors:
        problems += _check_others(ws, changed, new_ids, lost_files, lost_anchors, before_r, after_r)
    if problems:
        raise ValidationFailedError(problems)


def _check_others(
    ws: Workspace,
    changed: dict[str, tuple[str | None, str | None]],
    new_ids: dict[str, str],
    lost_files: set[str],
    lost_anchors: dict[str, set[str]],
    before_r: _Resolver,
    after_r: _Resolver,
) -> list[str]:
    """Scan the rest of the manual for duplicates of new IDs and links into what the patch removes."""
    problems: list[str] = []
    names = {posixpath.basename(p) for p in lost_files | set(lost_anchors)}
    for rel in _all_markdown(ws.root):
        if rel in changed:
            continue
        try:
            text = ws.read(rel)
        except (DocumentError, UdmError):
            continue
        if text is None:
            continue
        hits = [i for i in new_ids if i in text]
        linked = any(n in text for n in names)
        if not hits and not linked:
            continue
        doc = cached_parse(text, rel, ws.id_patterns)
        defined = {d.id: d.line for d in doc.id_defs}
        for ident in hits:
            if ident in defined:
                problems.append(
                    f"ID {ident} added in {new_ids[ident]} is already defined in {rel} (line {defined[ident] + 1})"
                )
        if linked:
            for target, reason in sorted(after_r.broken(doc) - before_r.broken(doc)):
                problems.append(f"{rel}: link to {target} would break ({reason})")
    return problems
