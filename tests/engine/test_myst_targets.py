"""MyST's targets (Sphinx with MyST-Parser, mystmd, Jupyter Book): a `(label)=` line before a block and
a directive's `:name:` or `:label:` option name an anchor of the page, so `[](#eq:book)` and
`page.md#fig:mountains` resolve; what code only shows names nothing. On Jupyter Book's docs 21 lint
errors before, 8 after (the 8 name labels of other pages: MyST's cross-page references are not
modelled)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.anchors import explicit_anchors

from .conftest import page_verdicts, write_tree

PAGE = """\
# Export

(my-target)=
## A section

See [the equation](#eq:book), [the figure](#fig:mountains), [the code](#code:start-server),
[the target](#my-target), [shown only](#not-this) and [in a plain fence](#in-fence).

:::{math}
:name: eq:book
x \\times y = z
:::

:::{figure} mountains.png
:label: fig:mountains
Mountains.
:::

```{code} shell
:linenos:
:name: code:start-server

$ jupyter book start
:name: not-this
```

```text
(in-fence)=
```

`(in-code)=`
"""


def test_myst_targets_are_anchors_of_their_page() -> None:
    assert explicit_anchors(PAGE) == {"my-target", "eq:book", "fig:mountains", "code:start-server"}


def test_links_to_myst_targets_resolve_on_their_page_and_from_others(tmp_path: Path) -> None:
    write_tree(
        tmp_path / "docs",
        {"export.md": PAGE, "other.md": "# Other\n\n[f](export.md#fig:mountains) [n](export.md#nope)\n"},
    )
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "export.md") == {
        "#eq:book": True,
        "#fig:mountains": True,
        "#code:start-server": True,
        "#my-target": True,
        "#not-this": False,
        "#in-fence": False,
    }
    assert page_verdicts(settings, "other.md") == {"export.md#fig:mountains": True, "export.md#nope": False}


@pytest.mark.parametrize(
    "text",
    [
        "(" * 1_000_000,
        ("(" + "a" * 299 + "\n") * 3_000,
        (":name: " + "x" * 400 + " y\n") * 2_500,
        ("```{x}\n" + ":a: b\n" * 1000 + "```\n") * 200,
    ],
    ids=["open-parens", "long-labels", "long-names", "many-options"],
)
def test_crafted_target_lines_are_read_in_bounded_time(text: str) -> None:
    started = time.perf_counter()
    explicit_anchors(text)
    assert time.perf_counter() - started < 2.0
