"""Data blocks versus examples: a YAML/JSON fence is data only when the manual says so."""

from __future__ import annotations

from pathlib import Path

from udm.config import load_settings
from udm.index import lint
from udm.markdown import block_ids, id_matcher, parse_document
from udm.markdown.document import fence_role

EXAMPLES = """\
# Writing plugins

A plugin's options, with comments (JSON5 as the docs show it):

```json
{
  // the plugin's id
  "id": "my-plugin",
  "path": "./src",
}
```

A fragment of a sidebar file:

```yaml
id: intro
  label: [unclosed
```

Another page with the same illustrative key:

```yaml
id: intro
```
"""


def test_illustrative_fences_are_examples_never_errors_or_ids() -> None:
    doc = parse_document(EXAMPLES, "plugins.md")
    assert [b.role for b in doc.blocks] == ["example", "example", "example"]
    assert doc.errors == [] and doc.id_defs == []
    assert doc.blocks[2].data == {"id": "intro"}  # still parsed, best-effort, for search
    assert doc.blocks[0].data is None and doc.blocks[0].error is None


DATA = """\
# Tasks

```yaml
id: TASK-P0-M0.1-T001
depends_on: [
```

```json
{"api_id": "API-COMP-001-v1", "x": 1}
```

```yaml udm
key: [unclosed
```

```yaml {data}
ok: true
```

```yaml {.data title="x"}
ok: true
```

```yaml {.example}
id: TASK-P0-M0.1-T009
```

```json User data response
{"id": "TASK-P0-M0.1-T010",}
```

```json Mixpanel with EU data residency
"integrations": {"x": 1}
```

```json
{"tool_id": "search", "description": "no family needed: tool_id is UDM's own key"}
```
"""


def test_data_when_it_defines_an_id_or_is_marked() -> None:
    doc = parse_document(DATA, "tasks.md")
    # A title in the info string is no mark ("data" in it included); the ID makes the first JSON data.
    roles = [b.role for b in doc.blocks]
    assert roles == ["data", "data", "data", "data", "data", "example", "data", "example", "data"]
    # Invalid data blocks stay errors; the marked example's ID is no definition.
    assert [e.split(": ", 1)[0] for e in doc.errors] == ["tasks.md:5", "tasks.md:13", "tasks.md:29"]
    # The invalid task block defines nothing (it does not parse); the tool block does.
    assert [d.id for d in doc.id_defs] == ["search"]
    assert block_ids(doc.blocks[5]) == []


def test_sections_named_in_settings_hold_data() -> None:
    text = "# Reference\n\n## Plugin options\n\n```yaml\nkey: [unclosed\n```\n\n## Other\n\n```yaml\nkey: [x\n```\n"
    assert parse_document(text, "r.md").errors == []
    named = parse_document(text, "r.md", data_sections=["plugin options"])
    assert [b.role for b in named.blocks] == ["data", "example"] and len(named.errors) == 1
    by_path = parse_document(text, "r.md", data_sections=["Reference > *"])
    assert [b.role for b in by_path.blocks] == ["data", "data"]
    # A page about settings is no configuration file: its snippets stay examples.
    assert [b.role for b in parse_document(text, "settings-appearance.md").blocks] == ["example", "example"]


def test_fence_role_rules() -> None:
    m = id_matcher(None)
    assert fence_role("python", "python udm", "id: COMP-001", None, m) == "example"
    assert fence_role("verify", "verify", "steps: []", None, m) == "data"
    assert fence_role("yaml", "yaml", "  - id: COMP-001\n", None, m) == "data"
    assert fence_role("yaml", "yaml", "note: COMP-001 is mentioned\n", None, m) == "example"
    assert fence_role("yaml", "yaml", "id: lower-case-name\n", None, m) == "example"


def test_lint_reports_no_noise_from_examples(tmp_path: Path) -> None:
    root = tmp_path / "udm"
    root.mkdir()
    (root / "a.md").write_text(EXAMPLES, encoding="utf-8")
    (root / "b.md").write_text(EXAMPLES.replace("# Writing", "# More on"), encoding="utf-8")
    (root / "c.md").write_text("# Opts\n\n```yaml\nkey: [x\n```\n", encoding="utf-8")
    settings = load_settings(tmp_path, root=str(root), state_dir=str(tmp_path / "state"))
    assert [f.rule for f in lint(settings)] == []
    named = load_settings(
        tmp_path, root=str(root), state_dir=str(tmp_path / "state2"), data_sections=["Opts"]
    )
    assert [(f.file, f.rule) for f in lint(named)] == [("c.md", "bad-block")]


def test_values_python_cannot_make_are_errors_not_crashes(tmp_path: Path) -> None:
    # YAML allows `2001-02-30` (a date past the calendar) and numbers of any length; Python refuses to
    # make the one and to print the other past 4,300 digits. Each used to crash the whole index build;
    # now each is an error at the value's own line.
    files = {
        "date.md": "---\ntitle: x\ndate: 2001-02-30\n---\n# Date\n",
        "digits.md": "---\nid: " + "9" * 5000 + "\n---\n# Digits\n",
        "hex.md": "---\nid: 0x" + "f" * 8000 + "\n---\n# Hex\n",
        "blocks.md": (
            "# Blocks\n\n```yaml\nid: TASK-P0-M0.1-T001\nn: " + "9" * 5000 + "\n```\n\n"
            '```json\n{"id": "COMP-001", "n": ' + "9" * 5000 + "}\n```\n\n"
            "```yaml\nid: TASK-P0-M0.1-T002\nwhen: 2026-13-01\n```\n\n"
            "```yaml\nid: TASK-P0-M0.1-T003\nsmall: 0x"
            + "f" * 100
            + "\nprintable: "
            + "9" * 4250
            + "\n```\n\n"
            "```yaml\nid: TASK-P0-M0.1-T004\npairs: !!pairs [{a: 0x" + "f" * 8000 + "}]\n```\n\n"
            "```yaml\nid: TASK-P0-M0.1-T005\nset: !!set\n  ? 0x" + "f" * 8000 + "\n```\n"
        ),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    found = sorted((f.file, f.line, f.message) for f in lint(settings) if f.rule == "bad-block")
    assert found == [
        ("blocks.md", 5, "invalid YAML: a number with more digits than Python prints (4,300 by default)"),
        ("blocks.md", 9, "invalid JSON: a number with more digits than Python prints (4,300 by default)"),
        ("blocks.md", 14, "invalid YAML: month must be in 1..12"),
        ("blocks.md", 25, "invalid YAML: a number with more digits than Python prints (4,300 by default)"),
        ("blocks.md", 31, "invalid YAML: a number with more digits than Python prints (4,300 by default)"),
        ("date.md", 3, "invalid YAML: day is out of range for month"),
        ("digits.md", 2, "invalid YAML: a number with more digits than Python prints (4,300 by default)"),
        ("hex.md", 2, "invalid YAML: a number with more digits than Python prints (4,300 by default)"),
    ]
    doc = parse_document(files["blocks.md"], "blocks.md")
    assert [b.data for b in doc.blocks][3] == {
        "id": "TASK-P0-M0.1-T003",
        "small": int("f" * 100, 16),
        "printable": int("9" * 4250),
    }
