"""`udm lint`: consistency checks over the index — IDs, dependencies, links, blocks, heading levels."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from udm.config import Settings
from udm.extract import outside_root
from udm.ids import id_family
from udm.query import Definition, UdmQuery, definition_places, get_query
from udm.site import display_target

__all__ = ["RULES", "Finding", "find_cycles", "lint"]

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
        "a Markdown file that cannot be read or is not UTF-8 (nothing in it is indexed)",
    ),
    "heading-skip": ("warning", "a heading more than one level below the previous one"),
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


def lint(settings: Settings, query: UdmQuery | None = None) -> list[Finding]:
    """Every finding over the (freshly refreshed) index, sorted by file and line."""
    q = query or get_query(settings)
    q.fresh()
    findings: list[Finding] = []
    with q.index.connect() as con:
        # Duplicate definitions: the same ID defined in two sections (a heading plus its own YAML
        # block is one definition place).
        rows = con.execute(
            "SELECT id, file, line, how, section, section_path FROM ids WHERE kind = 'def' AND id IN "
            "(SELECT id FROM ids WHERE kind = 'def' GROUP BY id HAVING count(DISTINCT (file, section)) > 1) "
            "ORDER BY id, file, line"
        ).fetchall()
        by_id: dict[str, list[Definition]] = {}
        for ident, file, line, how, section, section_path in rows:
            by_id.setdefault(ident, []).append(Definition(ident, file, line, how, section, section_path))
        for ident, defs in by_id.items():
            places = sorted(definition_places(defs), key=lambda d: (d.file, d.line))
            if len(places) > 1:
                listed = ", ".join(d.location() for d in places)
                for d in places[1:]:
                    findings.append(
                        _finding(
                            d.file,
                            d.line,
                            "duplicate-id",
                            f"{ident} is defined {len(places)} times ({listed})",
                        )
                    )

        defined = {r[0] for r in con.execute("SELECT DISTINCT id FROM ids WHERE kind = 'def'").fetchall()}
        families = {id_family(i) for i in defined}
        for ident, file, line in con.execute(
            "SELECT id, file, line FROM ids WHERE kind = 'ref' AND id NOT IN (SELECT id FROM ids WHERE kind = 'def') "
            "ORDER BY file, line"
        ).fetchall():
            if id_family(ident) in families:
                findings.append(
                    _finding(file, line, "undefined-id", f"{ident} is referenced but never defined")
                )

        tasks = con.execute("SELECT id, depends_on, file, line FROM tasks").fetchall()
        task_ids = {t[0] for t in tasks}
        graph: dict[str, list[str]] = {}
        where: dict[str, tuple[str, int]] = {}
        for ident, deps, file, line in tasks:
            graph.setdefault(ident, []).extend(deps or [])
            where.setdefault(ident, (file, line))
            for dep in deps or []:
                if dep not in task_ids:
                    findings.append(
                        _finding(file, line, "unknown-dependency", f"{ident} depends on unknown task {dep}")
                    )
        for comp in find_cycles(graph):
            file, line = where[comp[0]]
            path = _cycle_path(graph, comp)
            findings.append(
                _finding(file, line, "dependency-cycle", f"dependency cycle: {' -> '.join(path)}")
            )

        # The index resolved every link with the site's rules (udm.site): lint only reports verdicts.
        for file, line, target, target_file, fragment in con.execute(
            "SELECT file, line, target, target_file, fragment FROM links "
            "WHERE kind <> 'external' AND resolved = false ORDER BY file, line"
        ).fetchall():
            if target_file is not None:
                where = file if target_file == file else target_file
                findings.append(
                    _finding(file, line, "broken-anchor", f"no heading with anchor #{fragment} in {where}")
                )
            elif not target.startswith("/") and outside_root(display_target(file, target)):
                findings.append(
                    _finding(file, line, "broken-link", f"link target {target} is outside the UDM root")
                )
            else:
                findings.append(_finding(file, line, "broken-link", f"link target {target} does not exist"))

        for file, line, message in con.execute("SELECT file, line, message FROM problems").fetchall():
            findings.append(_finding(file, line, "bad-block", message))
        for file, error in con.execute(
            "SELECT path, error FROM files WHERE parser = 'none' AND error IS NOT NULL"
        ).fetchall():
            # Files that could not be decoded (parser 'none'): their error reads "file:line: reason".
            located, _, reason = error.partition(": ")
            at = located.rsplit(":", 1)[-1]
            findings.append(
                _finding(file, int(at) if at.isdigit() else 1, "unreadable-file", reason or error)
            )

        prev: dict[str, int] = {}
        for file, level, title, line in con.execute(
            "SELECT file, level, title, start_line FROM sections ORDER BY file, idx"
        ).fetchall():
            before = prev.get(file)
            if before is not None and level > before + 1:
                findings.append(
                    _finding(
                        file, line, "heading-skip", f"heading level {level} after level {before}: '{title}'"
                    )
                )
            prev[file] = level
    findings.sort(key=lambda f: (f.file, f.line, f.rule))
    return findings
