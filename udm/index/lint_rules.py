"""`udm lint`: consistency checks over the index — IDs, dependencies, links, blocks, heading levels.

What a docs team tunes (markdownlint's conventions): each rule's severity or `off` (`lint_rules`),
path globs where rules are not reported (`lint_ignore`), and comments in the files:
`<!-- udm-lint-disable RULE ... -->` / `<!-- udm-lint-enable RULE ... -->` (no rule: all of them),
`udm-lint-disable-line`, `udm-lint-disable-next-line`, `udm-lint-disable-file` and `udm-lint-enable-file`;
markdownlint's own comments switch the rules both have (MD001 heading-increment, MD051 link-fragments).
`exit_code` turns findings into the command's exit status (udm/index/lint_format.py writes the reports).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

import duckdb

from udm.config import Settings
from udm.index.query import Definition, UdmQuery, definition_places, get_query
from udm.markdown import id_family, id_matcher
from udm.site import NOT_PUBLISHED, Site, display_target, is_reference, no_holder, outside_root, site_notes

__all__ = ["RULES", "Finding", "LintConfig", "apply_config", "exit_code", "find_cycles", "lint"]

# rule -> (severity, what it checks)
RULES: dict[str, tuple[str, str]] = {
    "duplicate-id": ("error", "an ID defined in more than one place"),
    "undefined-id": ("error", "a reference to an ID of a known family that nothing defines"),
    "unknown-dependency": ("error", "a task's depends_on names a task that does not exist"),
    "dependency-cycle": ("error", "tasks whose depends_on form a cycle"),
    "broken-link": ("error", "an internal link to a missing file"),
    "broken-anchor": ("error", "a link to a heading anchor that does not exist"),
    "bad-block": ("error", "a YAML/JSON block (or front matter) that does not parse"),
    "unreadable-file": (
        "error",
        "a Markdown file that cannot be read, is not UTF-8, or the parser fails on (nothing in it is indexed)",
    ),
    "heading-skip": ("warning", "a heading more than one level below the previous one"),
    "site-config": (
        "warning",
        "the site config the links resolve by could not be read in full, or one below the manual root "
        "is not applied",
    ),
    "parser-fallback": (
        "warning",
        "a file the Markdown parser failed on, read again with some inline rules off (links may be missing)",
    ),
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem at file:line."""

    file: str
    line: int
    rule: str
    severity: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.severity}: {self.message} [{self.rule}]"


def _finding(file: str, line: int, rule: str, message: str) -> Finding:
    return Finding(file, int(line), rule, RULES[rule][0], message)


def find_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components with a cycle (size > 1, or a self-loop), via iterative Tarjan."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            succ = graph.get(node, [])
            recurse = False
            while i < len(succ):
                nxt = succ[i]
                i += 1
                if nxt not in graph:
                    continue
                if nxt not in index:
                    work.append((node, i))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in graph.get(node, []):
                    out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def _cycle_path(graph: dict[str, list[str]], comp: list[str]) -> list[str]:
    """One cycle through comp[0] inside the component, as a closed path (first node repeated)."""
    members = set(comp)
    start = comp[0]
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in graph.get(node, []):
            if nxt == start:
                return [*path, start]
            if nxt in members and nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return [*comp, comp[0]]


def lint(
    settings: Settings, query: UdmQuery | None = None, *, config: LintConfig | None = None
) -> list[Finding]:
    """Every finding over the (freshly refreshed) index that the lint settings and the files' own
    disable comments leave, with the configured severities, sorted by file and line."""
    found = _all_findings(settings, query)
    conf = config if config is not None else LintConfig.from_settings(settings)
    root = settings.udm_root

    def read(rel: str) -> str | None:
        try:
            return (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    return apply_config(found, conf, read)


def _all_findings(settings: Settings, query: UdmQuery | None = None) -> list[Finding]:
    """Every finding over the (freshly refreshed) index with the rules' default severities."""
    q = query or get_query(settings)
    q.fresh()
    findings: list[Finding] = []
    doc_ids = None
    if q.index.site().generator == "docusaurus":
        matcher = id_matcher(settings.id_patterns)

        def doc_ids(ident: str) -> bool:
            # A front matter `id:` there is the doc's id, unless it is of one of the ID families.
            return not matcher.findall(ident)

    site = q.index.site()
    # Line 1 of the config: its problems are the file's as a whole (a reader's error, a folder dropped).
    findings.extend(
        _finding(file or ".", 1, "site-config", message) for file, message in site_notes(settings, site)
    )
    with q.index.connect() as con:
        findings.extend(_duplicate_ids(con, doc_ids))
        findings.extend(_broken_links(con, site))
        for check in _CHECKS:
            findings.extend(check(con))
    findings.sort(key=lambda f: (f.file, f.line, f.rule))
    return findings


def _duplicate_ids(
    con: duckdb.DuckDBPyConnection, doc_ids: Callable[[str], bool] | None = None
) -> Iterator[Finding]:
    """duplicate-id: the same ID defined in two sections (a heading plus its own YAML block is one place).

    `doc_ids(id)`: whether a front matter `id:` of that value names its page within its folder
    (Docusaurus' doc ids: `intro` in guides/ and in api/ are two docs) rather than a manual's ID.
    """
    rows = con.execute(
        "SELECT id, file, line, how, section, section_path FROM ids WHERE kind = 'def' AND id IN "
        "(SELECT id FROM ids WHERE kind = 'def' GROUP BY id HAVING count(DISTINCT (file, section)) > 1) "
        "ORDER BY id, file, line"
    ).fetchall()
    by_id: dict[str, list[Definition]] = {}
    for ident, file, line, how, section, section_path in rows:
        key = ident
        if how == "front_matter" and doc_ids is not None and doc_ids(ident):
            key = f"{ident}\0{posixpath.dirname(file)}"  # one folder's (and version's) doc ids
        by_id.setdefault(key, []).append(Definition(ident, file, line, how, section, section_path))
    for defs in by_id.values():
        ident = defs[0].id
        places = sorted(definition_places(defs), key=lambda d: (d.file, d.line))
        if len(places) > 1:
            listed = ", ".join(d.location() for d in places)
            for d in places[1:]:
                yield _finding(
                    d.file, d.line, "duplicate-id", f"{ident} is defined {len(places)} times ({listed})"
                )


def _undefined_ids(con: duckdb.DuckDBPyConnection) -> Iterator[Finding]:
    """undefined-id: a reference to an ID of a known family that nothing defines."""
    defined = {r[0] for r in con.execute("SELECT DISTINCT id FROM ids WHERE kind = 'def'").fetchall()}
    families = {id_family(i) for i in defined}
    for ident, file, line in con.execute(
        "SELECT id, file, line FROM ids WHERE kind = 'ref' AND id NOT IN (SELECT id FROM ids WHERE kind = 'def') "
        "ORDER BY file, line"
    ).fetchall():
        if id_family(ident) in families:
            yield _finding(file, line, "undefined-id", f"{ident} is referenced but never defined")


def _task_dependencies(con: duckdb.DuckDBPyConnection) -> Iterator[Finding]:
    """unknown-dependency and dependency-cycle over the tasks' depends_on."""
    tasks = con.execute("SELECT id, depends_on, file, line FROM tasks").fetchall()
    task_ids = {t[0] for t in tasks}
    graph: dict[str, list[str]] = {}
    where: dict[str, tuple[str, int]] = {}
    for ident, deps, file, line in tasks:
        graph.setdefault(ident, []).extend(deps or [])
        where.setdefault(ident, (file, line))
        for dep in deps or []:
            if dep not in task_ids:
                yield _finding(file, line, "unknown-dependency", f"{ident} depends on unknown task {dep}")
    for comp in find_cycles(graph):
        file, line = where[comp[0]]
        path = _cycle_path(graph, comp)
        yield _finding(file, line, "dependency-cycle", f"dependency cycle: {' -> '.join(path)}")


def _broken_links(con: duckdb.DuckDBPyConnection, site: Site) -> Iterator[Finding]:
    """broken-anchor and broken-link: the verdicts the index stored (udm.index.resolve, the site's rules).
    A target above a manual read on GitHub but in its repository is a file that does not exist, not
    one out of reach."""
    for file, line, target, target_file, fragment, form in con.execute(
        "SELECT file, line, target, target_file, fragment, form FROM links "
        "WHERE kind <> 'external' AND resolved = false ORDER BY file, line"
    ).fetchall():
        if target_file is not None:
            where = file if target_file == file else target_file
            yield _finding(file, line, "broken-anchor", f"no heading with anchor #{fragment} in {where}")
        elif form == "autoref":
            yield _finding(
                file,
                line,
                "broken-link",
                f"cross-reference {target}: {no_holder(display_target(file, target))}",
            )
        elif site.labels and is_reference(target, fragment):
            # MyST: a reference to a target no page names.
            yield _finding(file, line, "broken-link", f"reference {target}: {no_holder(fragment)}")
        elif not target.startswith(("/", "{{")) and outside_root(shown := display_target(file, target)):
            if site.in_repository(shown):
                yield _finding(
                    file, line, "broken-link", f"link target {target} does not exist in the repository"
                )
            else:
                yield _finding(file, line, "broken-link", f"link target {target} is outside the UDM root")
        elif site.unpublished_page(display_target(file, target)):
            yield _finding(
                file,
                line,
                "broken-link",
                f"link target {target} {NOT_PUBLISHED}",
            )
        else:
            yield _finding(file, line, "broken-link", f"link target {target} does not exist")


def _bad_files(con: duckdb.DuckDBPyConnection) -> Iterator[Finding]:
    """bad-block (a data block that does not parse) and unreadable-file (not decoded, parser 'none')."""
    for file, line, message, rule in con.execute("SELECT file, line, message, rule FROM problems").fetchall():
        yield _finding(file, line, rule or "bad-block", message)
    for file, error in con.execute(
        "SELECT path, error FROM files WHERE parser = 'none' AND error IS NOT NULL"
    ).fetchall():
        # Their error reads "file:line: reason".
        located, _, reason = error.partition(": ")
        at = located.rsplit(":", 1)[-1]
        yield _finding(file, int(at) if at.isdigit() else 1, "unreadable-file", reason or error)


def _heading_skips(con: duckdb.DuckDBPyConnection) -> Iterator[Finding]:
    """heading-skip: a heading more than one level below the one before it."""
    prev: dict[str, int] = {}
    for file, level, title, line in con.execute(
        "SELECT file, level, title, start_line FROM sections ORDER BY file, idx"
    ).fetchall():
        before = prev.get(file)
        if before is not None and level > before + 1:
            yield _finding(
                file, line, "heading-skip", f"heading level {level} after level {before}: '{title}'"
            )
        prev[file] = level


# The checks after duplicate-id, in the order their findings were always listed (the sort keeps ties
# in this order).
_CHECKS: tuple[Callable[[duckdb.DuckDBPyConnection], Iterator[Finding]], ...] = (
    _undefined_ids,
    _task_dependencies,
    _bad_files,
    _heading_skips,
)


# ----- configuration -------------------------------------------------------------------------------

_SEVERITIES = ("error", "warning", "off")
_DIRECTIVE = re.compile(
    r"<!--\s*(udm-lint|markdownlint)-(disable-next-line|disable-line|disable-file|enable-file|disable|enable"
    r"|capture|restore)"
    r"((?:\s+[A-Za-z0-9][\w-]*)*)\s*-->"
)
# markdownlint's rules that are udm's too (by number and by alias): its comments, already in many
# manuals, switch them as they switch markdownlint's.
# markdownlint's link-fragments checks a page's links to its own headings only: switching it off
# leaves udm's findings for links into other pages.
_OWN_ANCHOR = "broken-anchor(own page)"
_MARKDOWNLINT = {
    "md001": "heading-skip",
    "heading-increment": "heading-skip",
    "header-increment": "heading-skip",
    "md051": _OWN_ANCHOR,
    "link-fragments": _OWN_ANCHOR,
}
# Where a file's comments are looked for: udm's and markdownlint's, not eslint-disable and the like.
_HAS_DIRECTIVE = re.compile(r"udm-lint-|markdownlint-")


def _directive_rules(tool: str, names: str) -> set[str]:
    """The udm rules a directive names ({"*"}: all of them); a markdownlint one names its own rules."""
    listed = names.split()
    if tool == "udm-lint":
        return set(listed) or {"*"}
    if not listed:
        return set(_MARKDOWNLINT.values())
    return {_MARKDOWNLINT[n.lower()] for n in listed if n.lower() in _MARKDOWNLINT}


@dataclass(frozen=True)
class LintConfig:
    """Severity per rule ('off' drops it), path globs with the rules not reported there, exit policy."""

    severities: dict[str, str]
    ignore: dict[str, tuple[str, ...]]
    fail_on: str = "error"
    max_warnings: int = -1

    @classmethod
    def from_settings(
        cls, settings: Settings, *, fail_on: str | None = None, max_warnings: int | None = None
    ) -> LintConfig:
        """The configuration the settings give (options override the exit policy); ConfigError names a bad rule."""
        from udm.errors import ConfigError

        severities = {rule: default for rule, (default, _) in RULES.items()}
        for rule, severity in settings.lint_rules.items():
            if rule not in RULES:
                raise ConfigError(f"lint_rules: no rule {rule!r} (rules: {', '.join(RULES)})")
            if severity not in _SEVERITIES:
                raise ConfigError(f"lint_rules: {rule}: severity {severity!r} is not error, warning or off")
            severities[rule] = severity
        ignore: dict[str, tuple[str, ...]] = {}
        for glob, rules in settings.lint_ignore.items():
            unknown = [r for r in rules if r != "*" and r not in RULES]
            if unknown:
                raise ConfigError(f"lint_ignore: {glob}: no rule {unknown[0]!r} (rules: {', '.join(RULES)})")
            ignore[glob] = tuple(rules) or ("*",)
        policy = fail_on if fail_on is not None else settings.lint_fail_on
        if policy not in ("error", "warning", "never"):
            raise ConfigError(f"fail-on {policy!r}: expected error, warning or never")
        cap = settings.lint_max_warnings if max_warnings is None else max_warnings
        return cls(severities, ignore, policy, cap)


def _ignored(config: LintConfig, finding: Finding) -> bool:
    for glob, rules in config.ignore.items():
        if ("*" in rules or finding.rule in rules) and fnmatch.fnmatchcase(finding.file, glob):
            return True
    return False


class _Switches:
    """Which rules the file's comments disable at each line (markdownlint's disable/enable semantics)."""

    def __init__(self, text: str, path: str) -> None:
        from udm.markdown import MarkdownParseError, parse_document

        # Comments inside code blocks are examples, not directives.
        code: set[int] = set()
        if _HAS_DIRECTIVE.search(text):
            try:
                blocks = parse_document(text, path).blocks
            except MarkdownParseError:
                blocks = []  # the file is reported as unreadable; its comments still count
            for block in blocks:
                code.update(range(block.start, block.end + 1))
        self.file_off: set[str] = set()
        self.line_off: dict[int, set[str]] = {}
        self.changes: list[tuple[int, str, set[str]]] = []  # (1-based line, disable|enable, rules or {"*"})
        for i, line in enumerate(text.splitlines()):
            if "lint-" not in line or i in code:
                continue
            for match in _DIRECTIVE.finditer(line):
                verb, rules = match.group(2), _directive_rules(match.group(1), match.group(3))
                if verb in ("capture", "restore"):
                    if match.group(1) == "markdownlint":
                        # markdownlint's capture/restore: the switches as they stood come back.
                        self.changes.append((i + 1, verb, set()))
                    continue
                if not rules:
                    continue  # only markdownlint rules udm does not have
                if verb == "disable-file":
                    self.file_off |= rules
                elif verb == "enable-file":
                    self.file_off -= rules
                elif verb == "disable-line":
                    self.line_off.setdefault(i + 1, set()).update(rules)
                elif verb == "disable-next-line":
                    self.line_off.setdefault(i + 2, set()).update(rules)
                else:
                    self.changes.append((i + 1, verb, rules))

    def off(self, rule: str, line: int) -> bool:
        """Whether `rule` is disabled at 1-based `line`."""
        if {"*", rule} & self.file_off or {"*", rule} & self.line_off.get(line, set()):
            return True
        disabled: set[str] = set()
        all_off = False
        saved: list[tuple[bool, set[str]]] = []
        for at, verb, rules in self.changes:
            if at > line:
                break
            if verb == "capture":
                saved.append((all_off, set(disabled)))
            elif verb == "restore":
                if saved:
                    all_off, disabled = saved.pop()
            elif verb == "disable":
                if "*" in rules:
                    all_off, disabled = True, set()
                else:
                    disabled |= rules
            elif "*" in rules:
                all_off, disabled = False, set()
            elif all_off:
                # `enable X` after `disable` (all): every rule but X stays off.
                disabled = {r for r in RULES if r not in rules} | (disabled - rules)
                all_off = False
            else:
                disabled -= rules
        return all_off or rule in disabled


def apply_config(
    findings: list[Finding], config: LintConfig, read_text: Callable[[str], str | None]
) -> list[Finding]:
    """Findings with the configured severities, less those turned off, ignored by path or by comments."""
    switches: dict[str, _Switches | None] = {}
    out: list[Finding] = []
    for f in findings:
        severity = config.severities.get(f.rule, f.severity)
        if severity == "off" or _ignored(config, f):
            continue
        if f.file not in switches and f.rule != "site-config":
            text = read_text(f.file)
            switches[f.file] = _Switches(text, f.file) if text and _HAS_DIRECTIVE.search(text) else None
        # A site config is no Markdown page: its findings are turned off by rule or path only.
        sw = None if f.rule == "site-config" else switches[f.file]
        if sw is not None and (
            sw.off(f.rule, f.line)
            or (f.rule == "broken-anchor" and _own_page(f) and sw.off(_OWN_ANCHOR, f.line))
        ):
            continue
        out.append(f if severity == f.severity else replace(f, severity=severity))
    return out


def _own_page(finding: Finding) -> bool:
    """Whether a broken-anchor finding is a link to the page's own headings."""
    return finding.message.endswith(f" in {finding.file}")


def exit_code(findings: list[Finding], config: LintConfig) -> int:
    """0 when the findings pass the policy; 1 for errors, or warnings with fail-on warning or over the cap."""
    if config.fail_on == "never":
        return 0
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    if errors or (config.fail_on == "warning" and warnings):
        return 1
    return 1 if 0 <= config.max_warnings < warnings else 0
