"""Checks a patch's results before commit: files parse, IDs stay unique, what resolved still resolves."""

from __future__ import annotations

import bisect
import itertools
import json
import posixpath
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from udm.datalimits import check_text
from udm.errors import DocumentError, PatchError, UdmError
from udm.markdown import Document, parse_front_matter, slugify
from udm.patch.splice import edit_form, line_opcodes
from udm.patch.workspace import Workspace
from udm.site import (
    NOT_PUBLISHED,
    NUMBER_PREFIX,
    PAGE_SUFFIXES,
    FolderIgnores,
    LinkResolver,
    Routes,
    Site,
    autoref_ids,
    beside_meta,
    beside_text,
    display_target,
    exists_within,
    explicit_anchors,
    gitignore_lines,
    is_reference,
    no_holder,
    outside_root,
    own_heading_rule,
    page_anchors,
    page_named,
    repeated_from,
    resolve_links,
    route_meta,
    site_for,
)

__all__ = ["ValidationFailedError", "validate_workspace"]


class ValidationFailedError(PatchError):
    """The patched files would break the manual; `problems` lists every finding."""

    def __init__(self, problems: list[str], *, overridable: bool = False) -> None:
        super().__init__("validation failed: " + "; ".join(problems))
        self.problems = problems
        # Only link, anchor and ID findings: an explicit override (who and why) may apply the patch.
        self.overridable = overridable


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


def _site_ids(site: Site, doc: Document) -> set[str]:
    """The anchors of a page on a site that makes heading ids its own way: its rule's and those the
    page names as the site scrolls to them."""
    return page_anchors(site, doc.path, doc.text)[0] | page_named(site, doc.text)


def _page_ids(site: Site, doc: Document) -> set[str]:
    """Every anchor a page has: its sections', the ids it names itself and those the site makes (a
    heading in a block, a repeat's `_1`), which a cross-reference may name."""
    return _anchors(doc) | explicit_anchors(doc.text) | page_anchors(site, doc.path, doc.text)[0]


class _Pages(AbstractSet[str]):
    """The manual's Markdown pages on one side of the patch: membership from the disk, walked only if iterated."""

    def __init__(self, resolver: _Resolver) -> None:
        self.resolver = resolver
        self._all: list[str] | None = None

    def __contains__(self, rel: object) -> bool:
        return isinstance(rel, str) and rel.lower().endswith(PAGE_SUFFIXES) and self.resolver.exists(rel)

    def _list(self) -> list[str]:
        if self._all is None:
            ws = self.resolver.ws
            found = set(self.resolver.listing())
            for rel in ws.current:
                if rel.lower().endswith(PAGE_SUFFIXES) and self.resolver.exists(rel):
                    found.add(rel)
                else:
                    found.discard(rel)
            self._all = sorted(found)
        return self._all

    def __iter__(self) -> Iterator[str]:
        return iter(self._list())

    def __len__(self) -> int:
        return len(self._list())


class _Resolver:
    """The manual before or after the patch: file texts, parsed pages, and the site's link rules."""

    def __init__(
        self,
        ws: Workspace,
        after: bool,
        site: Site,
        listing: list[list[str]],
        before: _Resolver | None = None,
    ) -> None:
        self.ws = ws
        self.after = after
        # One walk of a 38,000-file manual costs ~1.4 s: the two sides and the scan share it.
        self._listing = listing
        self._docs: dict[str, Document | None] = {}
        self._holders: dict[str, set[str]] = {}
        self._texts: dict[str, str | None] = {}
        self._word_pages: dict[str, set[str]] | None = None  # word -> the site's pages holding it
        # Files and folders above the manual (a site's pages beside it, a repository's files).
        self._file_above = exists_within(str(ws.root))
        self._folder_above = exists_within(str(ws.root), folder=True)
        meta_of = (
            self.route_meta
            if site.generator in ("docusaurus", "hugo", "starlight", "jekyll", "zola")
            else None
        )
        self.routes = Routes(site, _Pages(self), meta_of=meta_of)
        # The `.gitignore` files of the manual's folders as on disk, read once for both sides.
        self.disk_ignores: FolderIgnores = (
            before.disk_ignores if before is not None else FolderIgnores(ws.root)
        )
        self.links: LinkResolver = LinkResolver(
            self.routes,
            self.exists,
            self.is_folder,
            beside=beside_meta(ws.root),
            ignore_lines=_PatchedIgnores(ws, self.disk_ignores) if after else self.disk_ignores,
            ignored_before=None if before is None else before.links.build_output,
        )

    def listing(self) -> list[str]:
        """The Markdown files on disk, listed once for the validation (both sides share it)."""
        cached = self._listing
        if not cached:
            cached.append(_all_markdown(self.ws.root))
        return cached[0]

    def text(self, rel: str) -> str | None:
        """The file's text before or after the patch (None when absent), read once per validation."""
        if rel in self._texts:
            return self._texts[rel]
        # Edit form: a byte-order mark would hide a first heading, and JSON parsers refuse it.
        if rel in self.ws.current:
            text = self._changed(rel)
        elif outside_root(rel):
            # A page beside the manual (`../docs/x.md`, a Docusaurus folder there): read, within the
            # folder the path climbs to and as far as the index reads one, for its anchors.
            text = beside_text(self.ws.root, rel, self.ws.page_bytes) if self._file_above(rel) else None
        else:
            try:
                text = self.ws.read(rel)
            except UdmError:
                text = None
        self._texts[rel] = None if text is None else edit_form(text)
        return self._texts[rel]

    def _changed(self, rel: str) -> str | None:
        """A file the patch touches, as it is on this side (None when absent there)."""
        return self.ws.current[rel] if self.after else self.ws.original[rel]

    def exists(self, rel: str) -> bool:
        """Whether the file exists before or after the patch."""
        if rel in self.ws.current:
            return self._changed(rel) is not None
        if rel.startswith("../"):
            # A page or file the site publishes beside the manual (udm.site.routes): only its existence counts.
            return self._file_above(rel)
        try:
            real = self.ws.real_path(rel)
        except UdmError:
            return False
        return real.is_file()

    def is_folder(self, rel: str) -> bool:
        """Whether a folder exists under the root (a plain manual's link may name one: GitHub lists it),
        or above it in its repository (the resolver asks only for those `Site.in_repository` allows)."""
        if rel.startswith("../"):
            return self._folder_above(rel)
        try:
            return self.ws.real_path(rel).is_dir()
        except UdmError:
            return False

    def doc(self, rel: str) -> Document | None:
        """The parsed Markdown file (None when absent or not Markdown)."""
        if rel not in self._docs:
            text = self.text(rel) if rel.lower().endswith(PAGE_SUFFIXES) else None
            self._docs[rel] = self.ws.parse(text, rel) if text is not None else None
        return self._docs[rel]

    def route_meta(self, rel: str) -> dict[str, Any] | None:
        """The front matter keys that move the page's route (only the front matter is parsed)."""
        if rel in self._docs:
            doc = self._docs[rel]
            return route_meta(doc.front_matter) if doc is not None else None
        text = self.text(rel)
        if not text or not text.startswith("---"):
            return None
        data, _, _ = parse_front_matter(text[:262_144].splitlines(keepends=True)[:4000], rel)
        return route_meta(data)

    def verdicts(self, doc: Document) -> dict[str, tuple[bool, str]]:
        """Link target -> (resolves, why not) for every internal link and anchor of `doc`."""
        rows = [
            (link.target, doc.path, link.target, link.form) for link in doc.links if link.kind != "external"
        ]

        def anchors_in(pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
            found = set()
            for rel, anchor in pairs:
                other = doc if rel == doc.path else self.doc(rel)
                if other is not None and anchor in _anchors(other):
                    found.add((rel, anchor))
            return found

        out: dict[str, tuple[bool, str]] = {}
        holders = self.pages_with if self.routes.site.autorefs or self.routes.site.labels else None
        for target, file, fragment, ok in resolve_links(self.links, rows, anchors_in, self.text, holders):
            if ok is False:
                if target.startswith("[") and autoref_ids(target):
                    why = no_holder(str(fragment))
                elif self.routes.site.labels and file is None and fragment and is_reference(target, fragment):
                    why = no_holder(fragment)  # MyST: a reference to a target no page names
                elif file is None:
                    shown = display_target(doc.path, target)
                    why = (
                        f"{shown} {NOT_PUBLISHED if self.routes.is_unpublished(shown) else 'does not exist'}"
                    )
                else:
                    why = (
                        f"no heading #{fragment} in {file}"
                        if file != doc.path
                        else "no such heading in the file"
                    )
                out[target] = (False, why)
            else:
                out.setdefault(target, (True, ""))
        return out

    def pages_with(self, ids: set[str]) -> dict[str, set[str]]:
        """The site's pages that may hold each identifier as an anchor, for mkdocs-autorefs
        cross-references: those whose text holds its words (a heading's slug is made of them),
        confirmed by `resolve_links`. The pages are read once, into an index of their words, so a
        patch writing thousands of cross-references costs one pass."""
        todo = [i for i in ids if i not in self._holders]
        # A repeated heading's id ends in `_1` (Python-Markdown's toc): its words are the first's.
        if todo:
            if self._word_pages is None:
                self._word_pages = {}
                for rel in sorted(set(self.listing()) | set(self.ws.current)):
                    if not rel.lower().endswith(PAGE_SUFFIXES) or self.routes.page_route(rel) is None:
                        continue
                    text = self.text(rel)
                    for word in set(itertools.chain(*_words(text))) if text else ():
                        self._word_pages.setdefault(word, set()).add(rel)
            index = self._word_pages
            for ident in todo:
                found: set[str] = set()
                base = repeated_from(ident)
                for words in {*_words(ident), *(_words(base) if base else ())}:
                    found |= set.intersection(*(index.get(w, set()) for w in words))
                self._holders[ident] = found
        return {i: self._holders[i] for i in ids if self._holders.get(i)}


_RUN = re.compile(r"[a-z0-9]+")
_WORD = re.compile(r"\w+")
_NOT_SLUG = re.compile(r"[^\w\s-]")


def _words(text: str) -> tuple[tuple[str, ...], ...]:
    """The runs of letters and digits of a text as a heading slug may see it: lower case with accents
    taken off (`Café` holds `cafe`), split at punctuation or with it dropped as the slug drops it
    (`don't` holds `dont`), and as Unicode words (a slugify that keeps `安装`); the whole text for a
    text without any."""
    lower = text.lower()
    folded = lower
    if not lower.isascii():
        folded = unicodedata.normalize("NFKD", lower).encode("ascii", "ignore").decode("ascii")
    runs = (_RUN.findall(folded), _RUN.findall(_NOT_SLUG.sub("", folded)), _WORD.findall(lower))
    return tuple(tuple(found) or (lower,) for found in runs)


class _PatchedIgnores:
    """The `.gitignore` patterns of a folder of the manual after the patch: the patch's text of the
    file where it writes or deletes one, else the disk's (`udm.site.gitignore.FolderIgnores`)."""

    def __init__(self, ws: Workspace, disk: Callable[[str], tuple[str, ...]]) -> None:
        self.ws, self.disk = ws, disk

    def __call__(self, folder: str) -> tuple[str, ...]:
        """The patterns of `folder`'s `.gitignore` (a folder from the manual root) after the patch."""
        rel = f"{folder}/.gitignore"
        if rel in self.ws.current:
            text = self.ws.current[rel]
            return () if text is None else gitignore_lines(text)
        return self.disk(folder)


def _patched_site(site: Site, ws: Workspace) -> Site:
    """The site after the patch: the manual root's own `.gitignore` as the patch leaves it."""
    if ".gitignore" not in ws.current:
        return site
    text = ws.current[".gitignore"]
    lines = () if text is None else gitignore_lines(text)
    kept = tuple(entry for entry in site.ignores if entry[0] != "")
    return replace(site, ignores=(*kept, ("", lines)) if lines else kept)


def _newly_broken(
    path: str, before: dict[str, tuple[bool, str]], after: dict[str, tuple[bool, str]]
) -> list[str]:
    """Links of `path` that resolve before the patch (or that it writes) and would not after."""
    return [
        f"{path}: link to {target} would break ({why})"
        for target, (ok, why) in sorted(after.items())
        if not ok and before.get(target, (True, ""))[0]
    ]


def _all_markdown(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.suffix.lower() in PAGE_SUFFIXES and p.is_file() and not p.is_symlink()
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


def validate_workspace(
    ws: Workspace, *, site: Site | None = None, revert: bool = False, override: bool = False
) -> list[str]:
    """Raise ValidationFailedError if the workspace's changes would break the manual.

    Refused: files that stop parsing, sections swallowed by an unclosed fence, and links, anchors and
    IDs that resolve before the patch and would not after (a link the patch writes must resolve).
    A revert (`revert`) is never refused for links. With `override`, link, anchor and ID findings do
    not refuse the patch: they are returned, for the patch record, and only the rest can refuse it.
    """
    changed = ws.changed()
    site = site if site is not None else site_for(ws.root)
    listing: list[list[str]] = []
    before_r = _Resolver(ws, False, site, listing)
    after_r = _Resolver(ws, True, _patched_site(site, ws), listing, before_r)
    lost_files = {p for p, (_, after) in changed.items() if after is None}
    found = _Findings()
    for path, (before, after) in sorted(changed.items()):
        _check_file(found, path, before, after, before_r, after_r, revert)
    for path in lost_files:
        old = before_r.doc(path)
        found.lost_names.update(_names(path, old))
        if old is not None and (site.crossing_in(path) or site.labels):
            found.lost_anchors |= _page_ids(site, old)
    if not revert and any(posixpath.basename(p) == ".gitignore" for p in changed):
        # What a `.gitignore` ignores is a page a build writes (unknown, not broken): a patch that
        # changes one may break a link on any page, so every page's links are judged again.
        for path in before_r.listing():
            if path not in changed and (doc := before_r.doc(path)) is not None:
                # The page is the same on both sides: only its links' verdicts may differ.
                found.breaks += _newly_broken(path, before_r.verdicts(doc), after_r.verdicts(doc))
    lost_ids = found.old_defined - found.new_defined
    if found.new_ids or found.lost_names or lost_ids or found.lost_anchors:
        found.breaks += _check_others(
            ws,
            changed,
            found.new_ids,
            lost_ids,
            found.refs_after,
            set() if revert else found.lost_names,
            before_r,
            after_r,
            set() if revert else found.lost_anchors,
        )
    hard, breaks = found.hard, found.breaks
    if hard or (breaks and not override):
        raise ValidationFailedError(hard + breaks, overridable=not hard)
    return breaks


@dataclass
class _Findings:
    """What the changed files add up to: problems, and what the rest of the manual must be checked for."""

    hard: list[str] = field(default_factory=list)  # refuse the patch even with an override
    breaks: list[str] = field(default_factory=list)  # links, anchors and IDs: an override may apply them
    lost_names: set[str] = field(default_factory=set)  # names by which links reach what is gone or moved
    # Heading anchors the site's pages lose, where mkdocs-autorefs cross-references may name them.
    lost_anchors: set[str] = field(default_factory=set)
    new_ids: dict[str, str] = field(default_factory=dict)  # ID defined anew -> the file that defines it
    old_defined: set[str] = field(default_factory=set)
    new_defined: set[str] = field(default_factory=set)
    refs_after: dict[str, str] = field(default_factory=dict)  # ID -> first place that refers to it


def _check_file(
    found: _Findings,
    path: str,
    before: str | None,
    after: str | None,
    before_r: _Resolver,
    after_r: _Resolver,
    revert: bool,
) -> None:
    """Add what one changed file breaks to `found`."""
    if before is not None and path.lower().endswith(PAGE_SUFFIXES):
        old = before_r.doc(path)
        if old is not None:
            found.old_defined.update(d.id for d in old.id_defs)
    if after is None:
        return
    before = None if before is None else edit_form(before)
    after = edit_form(after)
    if not path.lower().endswith(PAGE_SUFFIXES):
        error = _structured_error(path, after)
        if error and (before is None or _structured_error(path, before) is None):
            found.hard.append(error)
        return
    new_doc = after_r.doc(path)
    old_doc = before_r.doc(path) if before is not None else None
    assert new_doc is not None
    found.hard += _parse_problems(path, old_doc, new_doc)
    _check_ids(found, path, old_doc, new_doc)
    if old_doc:
        found.hard += _swallowed(path, old_doc, new_doc)
    if not revert:
        old_links = before_r.verdicts(old_doc) if old_doc else {}
        found.breaks += _newly_broken(path, old_links, after_r.verdicts(new_doc))
    site = before_r.routes.site
    lost = _anchors(old_doc) - _anchors(new_doc) if old_doc else set()
    if (
        old_doc
        and not lost
        and (own_heading_rule(site) is not None or site.generator in _FORMS_BESIDE_GITHUB)
    ):
        # The site makes its ids its own way: `## What's new` to `## Whats new` keeps GitHub's
        # `whats-new` but takes VitePress' `what-s-new` away. Its ids alone are compared (a GitHub
        # form or an `<a id>` of the same name on the new page is no such id). GitBook and Mintlify
        # make theirs beside GitHub's: `.git/config` to `git/config` keeps `gitconfig` but takes
        # GitBook's `.git-config` away.
        lost = _site_ids(site, old_doc) - _site_ids(site, new_doc)
    if old_doc and (lost or route_meta(old_doc.front_matter) != route_meta(new_doc.front_matter)):
        found.lost_names.update(_names(path, old_doc))
    if old_doc and (site.crossing_in(path) or site.labels):
        # mkdocs-autorefs cross-references and MyST references may name an anchor of any page.
        found.lost_anchors |= _page_ids(site, old_doc) - _page_ids(site, new_doc)
    if old_doc is None and _shadows(path, before_r, after_r):
        # A new page takes a route something else served (Starlight's default-locale fallback, a
        # redirect, a slug): the links that landed there now land here, and must still resolve.
        found.lost_names.update(_names(path, new_doc))


# Sites whose heading anchors are GitHub's and forms of their own (`udm.site.anchors.page_anchors`).
_FORMS_BESIDE_GITHUB = ("gitbook", "mintlify")


def _shadows(path: str, before_r: _Resolver, after_r: _Resolver) -> bool:
    """Whether the route a new page gets was already served before the patch (by another page)."""
    route = after_r.routes.page_route(path)
    if route is None:
        return False
    hit = before_r.links.locate(path, "/" + route)
    return hit.file is not None or hit.external


def _check_ids(found: _Findings, path: str, old_doc: Document | None, new_doc: Document) -> None:
    """IDs: a definition that is new here must not exist twice in the file (nor, later, anywhere else)."""
    old_counts = Counter(d.id for d in old_doc.id_defs) if old_doc else Counter()
    new_counts = Counter(d.id for d in new_doc.id_defs)
    found.new_defined.update(new_counts)
    for ref in new_doc.id_refs:
        found.refs_after.setdefault(ref.id, f"{path}:{ref.line + 1}")
    for ident, n in new_counts.items():
        lines_of = [d.line + 1 for d in new_doc.id_defs if d.id == ident]
        if n > 1 and n > old_counts[ident]:
            found.breaks.append(
                f"{path}: ID {ident} would be defined {n} times (lines {', '.join(map(str, lines_of))})"
            )
        if old_counts[ident] == 0:
            found.new_ids[ident] = path


def _parse_problems(path: str, old_doc: Document | None, new_doc: Document) -> list[str]:
    """Blocks and front matter that parse before the patch and would not after."""
    problems = []
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
    return problems


def _names(path: str, doc: Document | None) -> set[str]:
    """Strings a link into `path` would contain: its name, its stem, its slug or id."""
    base = posixpath.basename(path)
    stem = base.rsplit(".", 1)[0]
    # Docusaurus routes drop a number prefix: 01-install.md is linked as .../install.
    # Starlight (and Hugo, lower-cased) link a page by its slugged name: Config Options.md as config-options.
    names = {base, stem, NUMBER_PREFIX.sub("", stem), slugify(stem)}
    if stem.lower() in ("index", "readme", "_index"):
        names.add(posixpath.basename(posixpath.dirname(path)) or base)
    meta = route_meta(doc.front_matter) if doc is not None else None
    for key in ("slug", "id", "url"):
        if meta and meta.get(key):
            names.add(str(meta[key]).strip("/").rsplit("/", 1)[-1] or str(meta[key]))
    return {n for n in names if n}


def _in_link(names: set[str]) -> re.Pattern[str]:
    """Where one of `names` may stand in a link target: after `/`, `(`, `<`, a quote, `=` or a reference
    definition's `]:`, and before an end of a path part. A word in prose (`tar` in "the tar archive",
    "start") is no link: the scan of a 38,000-page manual parsed every page that held the word."""
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"""(?:[/(<"'=]|\]:[ \t]*)(?:{alts})(?=[./#)"'>?\s]|$)""", re.MULTILINE)


def _check_others(
    ws: Workspace,
    changed: dict[str, tuple[str | None, str | None]],
    new_ids: dict[str, str],
    lost_ids: set[str],
    refs_after: dict[str, str],
    names: set[str],
    before_r: _Resolver,
    after_r: _Resolver,
    anchors: set[str] | None = None,
) -> list[str]:
    """Scan the rest of the manual: duplicates of new IDs, references to removed ones, links into what
    is gone, and cross-references (`[t][anchor]`, `[Title][]`) to anchors the site's pages lost."""
    problems: list[str] = []
    still_defined: set[str] = set()
    in_link = _in_link(names)
    labels = [f"[{a}]" for a in anchors or ()]
    for rel in before_r.listing():
        if rel in changed:
            continue
        try:
            text = ws.read(rel)
        except (DocumentError, UdmError):
            continue
        if text is None:
            continue
        hits = [i for i in new_ids if i in text]
        lost_hits = [i for i in lost_ids if i in text]
        linked = any(n in text for n in names) and in_link.search(text) is not None
        linked = linked or (
            bool(labels)
            and "][" in text
            and ("][]" in text or any(label in text for label in labels))
            and before_r.routes.site.crossing_in(rel)
        )
        # MyST: `[](#label)` or `[](label)` of any page may name a target the patch removes.
        linked = linked or (
            bool(anchors) and bool(before_r.routes.site.labels) and any(a in text for a in anchors or ())
        )
        if not hits and not linked and not lost_hits:
            continue
        doc = ws.parse(text, rel)
        defined = {d.id: d.line for d in doc.id_defs}
        for ident in hits:
            if ident in defined:
                problems.append(
                    f"ID {ident} added in {new_ids[ident]} is already defined in {rel} (line {defined[ident] + 1})"
                )
        still_defined.update(i for i in lost_hits if i in defined)
        for ref in doc.id_refs:
            if ref.id in lost_ids:
                refs_after.setdefault(ref.id, f"{rel}:{ref.line + 1}")
        if linked:
            problems += _newly_broken(rel, before_r.verdicts(doc), after_r.verdicts(doc))
    for ident in sorted(lost_ids - still_defined):
        if ident in refs_after:
            problems.append(f"ID {ident} would no longer be defined, but {refs_after[ident]} refers to it")
    return problems
