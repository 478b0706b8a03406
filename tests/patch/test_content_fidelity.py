"""Content fidelity: unclosed fences refused, BOM and CRLF kept, container prefixes carried, clear path errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from udm.config import Settings
from udm.patch import PatchResult, Workspace, apply_operations, apply_patch, parse_patch
from udm.patch.splice import disk_form, edit_form

DOC = "# Doc\n\n## A\n\ntext\n\n## B\n\n- **ID:** `TASK-P0-M0.1-T001`\n\n## C\n\nend\n"


def apply(settings: Settings, *ops: dict[str, Any], dry_run: bool = False) -> PatchResult:
    return apply_patch(
        parse_patch({"description": "test", "operations": list(ops)}), settings, dry_run=dry_run
    )


def put(settings: Settings, name: str, data: str) -> Path:
    path = settings.udm_root / name
    path.write_bytes(data.encode("utf-8"))
    return path


def edit(text: str, op: dict[str, Any]) -> str:
    """One operation applied in memory to d.md holding `text`."""
    ws = Workspace(Path("/"), reader=lambda rel: text.encode() if rel == "d.md" else None)
    apply_operations(parse_patch({"operations": [{"file": "d.md", **op}]}), ws)
    after = ws.read("d.md")
    assert after is not None
    return after


# -- unclosed fences and HTML blocks ------------------------------------------------------------


@pytest.mark.parametrize("fmt", [False, True])
@pytest.mark.parametrize(
    ("op", "content"),
    [
        ({"op": "append_to_section", "section": "A"}, "```\nsome code"),
        ({"op": "prepend_to_section", "section": "A"}, "~~~python\nx = 1"),
        ({"op": "replace_section", "section": "A"}, "intro\n\n````\ncode\n```"),
        ({"op": "insert_section", "section": "B", "heading": "New"}, "```yaml\nk: 1"),
        ({"op": "append_to_section", "section": "A"}, "> ```\n> quoted code"),
    ],
)
def test_unclosed_fence_in_content_is_refused(
    small: Settings, op: dict[str, Any], content: str, fmt: bool
) -> None:
    path = put(small, "a.md", DOC)
    res = apply(small, {**op, "file": "a.md", "content": content, "format": fmt})
    assert res.status == "invalid"
    assert res.error is not None
    assert f"({op['op']}) on a.md" in res.error
    assert "is never closed" in res.error
    assert path.read_text(encoding="utf-8") == DOC


@pytest.mark.parametrize("content", ["<!--\nhidden note", "<pre>\npreformatted", "<script>\nlet x = 1;"])
def test_unclosed_html_block_in_content_is_refused(small: Settings, content: str) -> None:
    path = put(small, "a.md", DOC)
    res = apply(small, {"op": "append_to_section", "file": "a.md", "section": "A", "content": content})
    assert res.status == "invalid"
    assert res.error is not None and "HTML block or comment" in res.error
    assert path.read_text(encoding="utf-8") == DOC


def test_closed_fences_and_html_still_insert(small: Settings) -> None:
    put(small, "a.md", DOC)
    content = "```\ncode\n```\n\n<!-- a note -->\n\n> ```\n> quoted\n> ```"
    res = apply(small, {"op": "append_to_section", "file": "a.md", "section": "A", "content": content})
    assert res.status == "committed", res.error


def test_unclosed_fence_in_new_markdown_file_is_refused(small: Settings) -> None:
    res = apply(small, {"op": "create_file", "file": "n.md", "content": "# N\n\n```\ncode", "format": True})
    assert res.status == "invalid"
    assert res.error is not None and "is never closed" in res.error
    assert not (small.udm_root / "n.md").exists()


def test_validation_flags_sections_and_ids_swallowed_by_an_edit(small: Settings) -> None:
    path = put(small, "a.md", DOC)
    # replace_text inserts no fragment of its own, so only the validation backstop can see this.
    res = apply(small, {"op": "replace_text", "file": "a.md", "old": "text\n", "new": "```\ntext\n"})
    assert res.status == "invalid"
    joined = " | ".join(res.problems)
    assert "section 'Doc > B' (line 7) would vanish" in joined
    assert "section 'Doc > C' (line 11) would vanish" in joined
    assert "ID TASK-P0-M0.1-T001 (line 9) would no longer be defined" in joined
    assert path.read_text(encoding="utf-8") == DOC


def test_deleting_renaming_and_moving_sections_is_not_swallowing(small: Settings) -> None:
    put(small, "a.md", DOC)
    res = apply(
        small,
        {"op": "delete_section", "file": "a.md", "section": "B"},
        {"op": "rename_heading", "file": "a.md", "section": "C", "to": "D"},
        {"op": "move_section", "file": "a.md", "section": "A", "to": "D", "position": "after"},
    )
    assert res.status == "committed", res.error


# -- paths --------------------------------------------------------------------------------------


def test_create_file_under_a_file_is_an_invalid_path(small: Settings) -> None:
    res = apply(small, {"op": "create_file", "file": "roadmap.md/y.md", "content": "# Y\n"})
    assert res.status == "invalid"
    assert res.error is not None
    assert "cannot use path 'roadmap.md/y.md': roadmap.md is a file, not a folder" in res.error
    assert (small.udm_root / "roadmap.md").is_file()


# -- byte-order marks ---------------------------------------------------------------------------


def test_bom_files_are_edited_and_keep_their_bom(small: Settings) -> None:
    files = {
        "a.md": "\ufeff---\ntitle: x\n---\n# A\n\ntext\n",
        "b.md": "\ufeff# B\n\ntext\n",
        "c.yaml": "\ufeffa: 1\nb: [1, 2]\n",
        "c.json": '\ufeff{"a": 1}\n',
    }
    for name, text in files.items():
        put(small, name, text)
    res = apply(
        small,
        {"op": "set_front_matter", "file": "a.md", "key": "title", "value": "y"},
        {"op": "append_to_section", "file": "b.md", "section": "B", "content": "more"},
        {"op": "set_yaml_key", "file": "c.yaml", "key": "a", "value": 2},
        {"op": "set_json_key", "file": "c.json", "key": "a", "value": 2},
    )
    assert res.status == "committed", res.error
    root = small.udm_root
    assert (root / "a.md").read_bytes() == "\ufeff---\ntitle: y\n---\n# A\n\ntext\n".encode()
    assert (root / "b.md").read_bytes() == "\ufeff# B\n\ntext\n\nmore\n".encode()
    assert (root / "c.yaml").read_bytes() == "\ufeffa: 2\nb: [1, 2]\n".encode()
    assert (root / "c.json").read_bytes() == '\ufeff{"a": 2}\n'.encode()


# -- CRLF line ends -----------------------------------------------------------------------------


def test_crlf_markdown_stays_crlf_and_a_key_edit_changes_one_line(small: Settings) -> None:
    text = "---\ntitle: x\n---\n# A\n\ntext\n\n```yaml\nk: 1\nm: [1, 2]\n```\n".replace("\n", "\r\n")
    path = put(small, "w.md", text)
    res = apply(
        small,
        {"op": "set_yaml_key", "file": "w.md", "section": "A", "key": "k", "value": 2},
        {"op": "set_front_matter", "file": "w.md", "key": "title", "value": "y"},
        {"op": "append_to_section", "file": "w.md", "section": "A", "content": "new line\n\nsecond para"},
    )
    assert res.status == "committed", res.error
    after = path.read_bytes().decode()
    assert after.count("\n") == after.count("\r\n")
    assert after == (
        "---\ntitle: y\n---\n# A\n\ntext\n\n```yaml\nk: 2\nm: [1, 2]\n```\n\nnew line\n\nsecond para\n"
    ).replace("\n", "\r\n")
    changed = [ln for ln in res.diff.split("\n")[2:] if ln and ln[0] in "+-" and ln[:3] not in ("+++", "---")]
    assert changed == [
        "-title: x\r",
        "+title: y\r",
        "-k: 1\r",
        "+k: 2\r",
        "+\r",
        "+new line\r",
        "+\r",
        "+second para\r",
    ]


def test_crlf_yaml_file_key_edit_changes_one_line(small: Settings) -> None:
    path = put(small, "w.yaml", "a: 1\r\nb:\r\n  - 1\r\n  - 2\r\n")
    res = apply(small, {"op": "set_yaml_key", "file": "w.yaml", "key": "b[0]", "value": 5})
    assert res.status == "committed", res.error
    assert path.read_bytes() == b"a: 1\r\nb:\r\n  - 5\r\n  - 2\r\n"


@pytest.mark.parametrize("quote", ["", "> "])
def test_crlf_block_in_a_mixed_file_keeps_crlf(quote: str) -> None:
    block = f"{quote}```yaml\r\n{quote}k: 1\r\n{quote}m: [1, 2]\r\n{quote}```\r\n"
    got = edit(f"# A\n\ntext\n\n{block}", {"op": "set_yaml_key", "section": "A", "key": "k", "value": 2})
    assert got == f"# A\n\ntext\n\n{block.replace('k: 1', 'k: 2')}"


def test_replace_code_block_in_a_crlf_file_stays_crlf() -> None:
    before = "# A\r\n\r\n```sh\r\necho 1\r\n```\r\n"
    got = edit(before, {"op": "replace_code_block", "section": "A", "content": "echo 2\necho 3\n"})
    assert got == "# A\r\n\r\n```sh\r\necho 2\r\necho 3\r\n```\r\n"


@given(st.text(alphabet="ab\r\n\ufeff", max_size=30))
def test_edit_form_round_trips_every_text(text: str) -> None:
    assert disk_form(edit_form(text), text) == text
    body = text.removeprefix("\ufeff")
    if "\r\n" in body and body.count("\n") == body.count("\r\n") and "\r\r\n" not in body:
        assert "\r\n" not in edit_form(text)


# -- fences inside block quotes and list items --------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("# A\n\n> ```yaml\n> k: 1\n>\n> m: 2\n> ```\n", "# A\n\n> ```yaml\n> k: 2\n>\n> m: 2\n> ```\n"),
        ("# A\n\n- ```yaml\n  k: 1\n  ```\n", "# A\n\n- ```yaml\n  k: 2\n  ```\n"),
        ("# A\n\n> - ```yaml\n>   k: 1\n>   ```\n", "# A\n\n> - ```yaml\n>   k: 2\n>   ```\n"),
        ("# A\n\n- item\n\n  ```yaml\n  k: 1\n  ```\n", "# A\n\n- item\n\n  ```yaml\n  k: 2\n  ```\n"),
    ],
)
def test_set_yaml_key_in_a_contained_fence_keeps_the_prefix(before: str, after: str) -> None:
    assert edit(before, {"op": "set_yaml_key", "section": "A", "key": "k", "value": 2}) == after


def test_replace_code_block_in_a_block_quote_keeps_the_prefix() -> None:
    before = "# A\n\n> ```sh\n> echo 1\n> ```\n\nafter\n"
    got = edit(before, {"op": "replace_code_block", "section": "A", "content": "echo 2\n\necho 3\n"})
    assert got == "# A\n\n> ```sh\n> echo 2\n>\n> echo 3\n> ```\n\nafter\n"


# -- messages -----------------------------------------------------------------------------------


def test_replace_code_block_without_a_block_names_any_code_block(small: Settings) -> None:
    put(small, "a.md", DOC)
    res = apply(small, {"op": "replace_code_block", "file": "a.md", "section": "A", "content": "x"})
    assert res.status != "committed"
    assert res.error is not None
    assert "no fenced code block in a.md section 'Doc > A'" in res.error
    assert "YAML/JSON" not in res.error


def test_replace_code_block_with_several_plain_blocks_lists_them(small: Settings) -> None:
    put(small, "a.md", "# A\n\n```sh\none\n```\n\n```sh\ntwo\n```\n")
    res = apply(small, {"op": "replace_code_block", "file": "a.md", "section": "A", "content": "x"})
    assert res.status != "committed"
    assert res.error is not None and "2 code blocks in a.md section 'A'" in res.error


@pytest.mark.parametrize("content", ["one\u2028two", "page\x0cbreak", "next\x85line"])
def test_content_with_other_line_separators_is_inserted(content: str) -> None:
    # Lines break only at \n, \r\n and \r in the parser; the closed-block check must count the same.
    after = edit(DOC, {"op": "append_to_section", "section": "A", "content": content, "format": False})
    assert content in after and after.index(content) < after.index("## B")
