"""What a fenced block is: data (the manual's IDs and rows, errors reported) or an example, and its IDs."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from udm.markdown.blockdata import DATA_LANGS
from udm.markdown.blockdata import collect_ids as _collect_ids
from udm.markdown.ids import DEFINING_KEYS, IdMatcher
from udm.markdown.model import Block
from udm.markdown.simple_yaml import simple_yaml_ids

__all__ = ["block_ids", "fence_role"]


def block_ids(block: Block) -> list[str]:
    """IDs a data block defines: string values of id/task_id/mode_id/tool_id keys, at any depth (examples: none)."""
    if block.role != "data":
        return []
    ids: list[str] | None = block._lazy.get("ids")
    if ids is None:
        parsed = block._lazy.get("parsed")
        # Once the data is parsed (the index parses every block), its IDs are read from it: the
        # cheap scan gives the same IDs where it answers (property-tested), and would read the text again.
        ids = None if parsed is not None and parsed[1] is None else _cheap_block_ids(block)
        if ids is None:
            ids = []
            _collect_ids(block.data, ids)
        block._lazy["ids"] = ids
    return list(ids)


def _cheap_block_ids(block: Block) -> list[str] | None:
    """The block's IDs when they can be told without parsing it (None: parse it)."""
    if block.lang not in DATA_LANGS:
        return []
    text = block.text
    # Without an escape, a key spelled nowhere in the text cannot be one of the block's keys.
    if "\\" not in text and not any(key in text for key in DEFINING_KEYS):
        return []
    if block.lang == "json":
        return None
    return simple_yaml_ids(text, DEFINING_KEYS)


# Info-string marks of a fence's role: the word `udm`, or an attribute block `{data}` / `{.data ...}` /
# `{udm}` for data, `{example}` / `{.example}` for an example. Bare words other than `udm` are no
# marks: sites use the rest of the info string as a title ("json User data response").
_DATA_MARKS = frozenset({"udm", "data", ".udm", ".data"})
_EXAMPLE_MARKS = frozenset({"example", ".example"})
_ATTR_BLOCK = re.compile(r"\{([^{}]*)\}")
# A key `id` or `..._id` (quoted or not, YAML or JSON) and the value after it: `api_id: "API-COMP-001-v1"`.
_ID_KEY_VALUE = re.compile(
    r"""(?:^|[\s{,\-])["']?(?:[A-Za-z0-9]+_)*id["']?[ \t]*:[ \t]*["']?([^\s"',}\]#]+)""",
    re.MULTILINE | re.IGNORECASE,
)
_UDM_KEYS = re.compile(r"""(?:^|[\s{,])["']?(?:task_id|mode_id|tool_id)["']?[ \t]*:""", re.MULTILINE)


def fence_role(
    lang: str,
    info: str,
    text: str,
    section_path: str | None,
    matcher: IdMatcher,
    data_sections: Sequence[str] = (),
) -> str:
    """'data' or 'example': a YAML/JSON fence is data only when the manual says so.

    In order: an info-string mark (`{example}` / `udm`, `{data}`, `{.data}`); a `verify`
    block; a section whose heading path matches a `data_sections` pattern; or a block that defines
    a UDM ID (a `task_id`/`mode_id`/`tool_id` key, or an `id` /
    `..._id` key holding an ID of the configured families). Everything else is an example.
    """
    if lang not in DATA_LANGS:
        return "example"
    low = info.lower()
    words = set(low.split()[1:]) & {"udm"}
    if "{" in low:
        for attrs in _ATTR_BLOCK.findall(low):
            words.update(attrs.split())
    if words & _EXAMPLE_MARKS:
        return "example"
    if words & _DATA_MARKS or lang == "verify":
        return "data"
    if section_path is not None and data_sections and _in_sections(section_path, data_sections):
        return "data"
    # The regex needs one of the three key names: the substring tests skip its slower scan.
    if ("task_id" in text or "mode_id" in text or "tool_id" in text) and _UDM_KEYS.search(text):
        return "data"
    if "id" in text.lower():
        for m in _ID_KEY_VALUE.finditer(text):
            if matcher.is_id(m.group(1)):
                return "data"
    return "example"


def _in_sections(path: str, patterns: Sequence[str]) -> bool:
    """Whether a heading path (or its last title) matches one of the glob patterns, ignoring case."""
    low = path.lower()
    title = low.rsplit(" > ", 1)[-1]
    return any(fnmatch.fnmatchcase(title, p.lower()) or fnmatch.fnmatchcase(low, p.lower()) for p in patterns)
