"""Verification specs: checks (steps + expectations) from YAML/JSON spec files and ```verify blocks in the UDM.

A check names the UDM claims it tests (`udm_refs`); a check written inside a UDM section as a
fenced ```` ```verify ```` YAML block gets that section's IDs (or `file#anchor`) by default.
URLs may use `${BASE_URL}` (or any `${NAME}` from the spec's `vars`) or be relative (`/login`),
resolved against a base URL given at run time, so the same checks target any host and port.
This module reads and validates (the model is `udm.verify.model`); running checks is
`tasks.browser.verify`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from udm.config import Settings
from udm.datalimits import check_text, read_utf8
from udm.errors import DocumentError, InvalidURLError
from udm.index import manual_documents, skip_reason
from udm.markdown import Document
from udm.net import join_url
from udm.verify.model import Check, CheckProblem, VerifySpec

if TYPE_CHECKING:
    from udm.index import PageRead

__all__ = [
    "filter_checks",
    "gather_checks",
    "inline_checks",
    "inline_checks_from_index",
    "load_spec_file",
    "resolve_url",
    "substitute",
]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        parts.append(f"{loc or '(check)'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def load_spec_file(path: Path) -> tuple[list[Check], list[CheckProblem], VerifySpec | None]:
    """Checks of a YAML/JSON spec file; problems name the file (and the check) that is wrong."""
    try:
        text = read_utf8(path)
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise DocumentError(str(exc)) from exc
    try:
        check_text(text, "json" if path.suffix.lower() == ".json" else "yaml", what=str(path))
        raw = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise DocumentError(f"{path}: not valid YAML/JSON: {exc}") from exc
    if isinstance(raw, list):
        raw = {"checks": raw}
    if not isinstance(raw, dict) or not isinstance(raw.get("checks"), list):
        raise DocumentError(f"{path}: expected a mapping with a 'checks' list")
    checks: list[Check] = []
    problems: list[CheckProblem] = []
    for i, item in enumerate(raw["checks"]):
        where = f"{path}: checks[{i}]"
        if isinstance(item, dict) and item.get("id"):
            where += f" ({item['id']})"
        try:
            check = Check.model_validate({**item, "source": str(path)} if isinstance(item, dict) else item)
        except ValidationError as exc:
            problems.append(CheckProblem(where, _describe(exc)))
            continue
        check._base_dir = path.parent
        checks.append(check)
    try:
        spec = VerifySpec.model_validate({k: v for k, v in raw.items() if k != "checks"} | {"checks": []})
    except ValidationError as exc:
        raise DocumentError(f"{path}: {_describe(exc)}") from exc
    return checks, problems, spec


def _ids_in(data: Any) -> set[str]:
    """Every `id` value in a verify block's data (these are check IDs, not claims)."""
    found: set[str] = set()
    if isinstance(data, dict):
        if isinstance(data.get("id"), str):
            found.add(data["id"])
        for value in data.values():
            found |= _ids_in(value)
    elif isinstance(data, list):
        for value in data:
            found |= _ids_in(value)
    return found


def _block_checks(
    path: str,
    line: int,
    data: Any,
    error: str | None,
    anchor: str | None,
    ids: list[str],
    base_dir: Path,
    check_ids: set[str] | frozenset[str] = frozenset(),
) -> tuple[list[Check], list[CheckProblem]]:
    """Checks of one ```verify block (1-based `line`); udm_refs default to the section's IDs or anchor."""
    source = f"{path}:{line}"
    section = f"{path}#{anchor}" if anchor else path
    items = data.get("checks") if isinstance(data, dict) and "checks" in data else data
    # The section's own IDs, not the IDs of checks (which the ID scanner also finds in verify blocks).
    claims = [i for i in ids if i not in check_ids and not i.upper().startswith("CHK-")]
    default_refs = claims or [section]
    if error:
        return [], [CheckProblem(source, f"verify block is not valid YAML: {error}", tuple(default_refs))]
    checks: list[Check] = []
    problems: list[CheckProblem] = []
    for n, item in enumerate(items if isinstance(items, list) else [items]):
        if not isinstance(item, dict):
            problems.append(CheckProblem(source, "a verify block holds a check mapping", tuple(default_refs)))
            continue
        values = {"udm_refs": default_refs, **item, "source": source, "section": section}
        values.setdefault("id", f"CHK-{Path(path).stem}-{line}-{n + 1}")
        try:
            check = Check.model_validate(values)
        except ValidationError as exc:
            problems.append(CheckProblem(source, _describe(exc), tuple(default_refs)))
            continue
        check._base_dir = base_dir
        check._in_manual = True
        checks.append(check)
    return checks, problems


# One ```verify block as both readers see it: its 1-based line, parsed data, YAML error, and the
# anchor and IDs of the section holding it.
_Block = tuple[int, Any, str | None, str | None, list[str]]


def _page_checks(path: str, blocks: list[_Block], base_dir: Path) -> tuple[list[Check], list[CheckProblem]]:
    """The checks of one page's ```verify blocks; the one rule both readers (files, index) follow.

    A section's IDs include the IDs of checks written in it (the ID scanner reads verify blocks too):
    those of this page's checks are not claims. A check ID in another file is: a reader of this page
    sees the claim and not that check, so it stays in the default `udm_refs`.
    """
    own = set().union(*(_ids_in(data) for _, data, _, _, _ in blocks))
    checks: list[Check] = []
    problems: list[CheckProblem] = []
    for line, data, error, anchor, ids in blocks:
        found, bad = _block_checks(path, line, data, error, anchor, ids, base_dir, own)
        checks += found
        problems += bad
    return checks, problems


def _skipped_problem(path: str, error: str | None) -> CheckProblem:
    """A page neither reader could parse (too large, not valid UTF-8), as the index lists it."""
    where, reason = skip_reason(path, error)
    return CheckProblem(where, reason)


def inline_checks(
    settings: Settings, documents: Iterable[Document] | None = None
) -> tuple[list[Check], list[CheckProblem]]:
    """Every ```verify block of the UDM as checks, parsing the Markdown files directly.

    Pages are read as the index reads them (`manual_documents`): a page the index skips is not
    parsed but listed as a problem with the index's reason.
    """
    root = settings.udm_root
    skipped: list[tuple[str, PageRead]] = []
    docs = manual_documents(settings, skipped) if documents is None else documents
    checks: list[Check] = []
    problems: list[CheckProblem] = []
    for doc in docs:
        blocks: list[_Block] = []
        for block in doc.blocks:
            if block.lang == "verify":
                section = doc.sections[block.section] if block.section is not None else None
                anchor, ids = (section.anchor, list(section.ids)) if section else (None, [])
                blocks.append((block.start + 1, block.data, block.error, anchor, ids))
        found, bad = _page_checks(doc.path, blocks, (root / doc.path).parent)
        checks += found
        problems += bad
    problems += [_skipped_problem(path, page.error) for path, page in skipped]
    return checks, problems


def inline_checks_from_index(settings: Settings) -> tuple[list[Check], list[CheckProblem]]:
    """Every ```verify block, read from the index's `blocks` table (refreshed first, never stale);
    the pages the index skipped are problems, as `inline_checks` lists them."""
    from udm.index import read_fresh  # DuckDB loads only when the index is asked

    rows = read_fresh(
        settings,
        "SELECT b.file, b.start_line, b.data, b.error, s.anchor, s.ids, NULL FROM blocks b "
        "LEFT JOIN sections s ON s.file = b.file AND s.idx = b.section WHERE b.lang = 'verify' "
        "UNION ALL SELECT path, NULL, NULL, NULL, NULL, NULL, error FROM files WHERE parser = 'none' "
        "ORDER BY 1, 2",
    )
    pages: dict[str, list[_Block]] = {}
    skipped: list[tuple[str, str]] = []
    for path, line, data, error, anchor, ids, skip in rows:
        if line is None:
            skipped.append((path, skip))
            continue
        parsed = json.loads(data) if isinstance(data, str) else data
        pages.setdefault(path, []).append((int(line), parsed, error, anchor, list(ids or [])))
    checks: list[Check] = []
    problems: list[CheckProblem] = []
    for path, blocks in pages.items():
        found, bad = _page_checks(path, blocks, (settings.udm_root / path).parent)
        checks += found
        problems += bad
    problems += [_skipped_problem(path, error) for path, error in skipped]
    return checks, problems


def gather_checks(
    settings: Settings,
    specs: Iterable[Path | str] = (),
    *,
    inline: bool = True,
    only: Iterable[str] = (),
    refs: Iterable[str] = (),
    use_index: bool = True,
) -> tuple[list[Check], list[CheckProblem]]:
    """Checks from spec files and (optionally) the UDM's verify blocks, filtered by ID / UDM ref."""
    checks: list[Check] = []
    problems: list[CheckProblem] = []
    for spec in specs:
        found, bad, _ = load_spec_file(Path(spec))
        checks += found
        problems += bad
    if inline and settings.udm_root.is_dir():
        if use_index:
            try:
                found, bad = inline_checks_from_index(settings)
            except Exception:  # a busy or broken index must not stop verification: parse the files
                found, bad = inline_checks(settings)
        else:
            found, bad = inline_checks(settings)
        checks += found
        problems += bad
    seen: dict[str, str] = {}
    unique: list[Check] = []
    for check in checks:
        if check.id in seen:
            problems.append(
                CheckProblem(
                    check.source or check.id, f"duplicate check id {check.id} (first in {seen[check.id]})"
                )
            )
            continue
        seen[check.id] = check.source or ""
        unique.append(check)
    only, refs = list(only), list(refs)
    if only:
        problems = []  # a run of named checks does not report unrelated broken ones
    elif refs:
        wanted = {r.lower() for r in refs}
        problems = [p for p in problems if wanted & {r.lower() for r in p.udm_refs}]
    return filter_checks(unique, only, refs), problems


def filter_checks(checks: list[Check], only: Iterable[str] = (), refs: Iterable[str] = ()) -> list[Check]:
    """Checks whose ID is in `only` and/or that reference one of `refs` (empty filters keep all)."""
    only_set = {o.lower() for o in only}
    ref_set = {r.lower() for r in refs}
    out = []
    for check in checks:
        if only_set and check.id.lower() not in only_set:
            continue
        if ref_set and not any(
            r.lower() in ref_set or r.lower().split("#")[-1] in ref_set for r in check.udm_refs
        ):
            continue
        out.append(check)
    return out


def substitute(value: Any, variables: dict[str, str]) -> Any:
    """Replace ${NAME} placeholders in every string of a value (unknown names are left as they are)."""
    if isinstance(value, str):
        return _VAR.sub(lambda m: variables.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


def resolve_url(url: str, base_url: str | None) -> tuple[str | None, str | None]:
    """(absolute URL, None) or (None, why it cannot be resolved): relative URLs need a base URL."""
    if "${" in url:
        names = ", ".join(sorted(set(_VAR.findall(url)))) or url
        return None, f"unresolved variable {names} in url (pass --base-url or set it in the spec's vars)"
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:", url):
        return url, None
    if url.startswith("//"):
        return "https:" + url, None
    if not url.startswith(("/", "./", "../")) and "." in url.split("/")[0]:
        return "https://" + url, None  # a host without a scheme, as the browser tools treat it
    if not base_url:
        return None, f"relative url '{url}' needs a base URL (pass --base-url)"
    try:
        return join_url(base_url.rstrip("/") + "/", url.lstrip("/"), what="url"), None
    except InvalidURLError as exc:
        return None, str(exc)
