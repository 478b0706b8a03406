"""A Hugo site's link render hook (`layouts/_markup/render-link.html`): a destination it compares the
link's with is one it renders itself (Hugo's own docs write `[glossary term](g)`: 748 false broken
links before), and a hook that looks the destination up with `.Page.GetPage` (as Hugo's embedded hook
does) finds a page from the page's folder, then from the content root, as a `ref` does (Hugo's docs'
`[Title](methods/site/title/)` from `templates/introduction.md`). Fixtures written by the tests."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from udm.index import lint
from udm.index.links import check_links
from udm.site.routes import detect_site

from .conftest import page_verdicts, site_settings, write_tree

HOOK = """{{- $u := urls.Parse .Destination }}
{{- if eq $u.String "g" }}
  {{- /* a glossary term */}}{{ partial "glossary-link.html" . }}
{{- else if eq "terms" .Destination }}{{ .Text }}
{{- else with $u.Path }}
  {{- with $.PageInner.GetPage . }}<a href="{{ .RelPermalink }}">{{ $.Text }}</a>{{ end }}
{{- end }}
"""
PAGE = (
    "# Intro\n\n[a term](g) [b](terms) [c](methods/site/title/) [d](functions/missing/) "
    "[e](../guide/) [f](gg)\n"
)


def _site(tmp_path: Path, hook: str | None = HOOK, config: str = "baseURL = 'https://x.dev/'\n") -> Path:
    site = tmp_path / "site"
    write_tree(site, {"hugo.toml": config})
    if hook is not None:
        write_tree(site, {"layouts/_markup/render-link.html": hook})
    return site


def _manual(site: Path) -> dict[str, str]:
    return {
        "templates/introduction.md": PAGE,
        "methods/site/title.md": "# Title\n",
        "guide/_index.md": "# Guide\n",
    }


def test_the_hook_renders_its_own_destinations_and_finds_pages(tmp_path: Path) -> None:
    site = _site(tmp_path)
    settings = site_settings(site / "content", _manual(site))
    assert page_verdicts(settings, "templates/introduction.md") == {
        "g": None,  # the hook's own
        "terms": None,
        "methods/site/title/": True,  # from the content root, as GetPage finds it
        "functions/missing/": False,
        "../guide/": True,
        "gg": False,  # only the very destination the hook compares with
    }
    assert {f.message for f in lint(settings) if f.rule == "broken-link"} == {
        "link target functions/missing/ does not exist",
        "link target gg does not exist",
    }
    reasons = {
        r.target: r.reason for r in check_links(settings, external=False).results if r.status == "skipped"
    }
    assert reasons["g"] == "the site's link render hook renders the destination g itself, not checked"
    described = detect_site(settings.udm_root).describe()
    assert described["link_hook_destinations"] == ["g", "terms"]
    assert described["link_hook_finds_pages"] is True


def test_without_a_hook_the_links_are_plain(tmp_path: Path) -> None:
    site = _site(tmp_path, hook=None)
    settings = site_settings(site / "content", _manual(site))
    assert page_verdicts(settings, "templates/introduction.md") == {
        "g": False,
        "terms": False,
        "methods/site/title/": False,  # a URL relative to the page's own
        "functions/missing/": False,
        "../guide/": True,
        "gg": False,
    }


@pytest.mark.parametrize(
    "config",
    [
        "[markup.goldmark.renderHooks.link]\nuseEmbedded = 'always'\n",
        "[markup.goldmark.renderHooks.link]\nenableDefault = true\n",
    ],
)
def test_hugos_embedded_hook_finds_pages(tmp_path: Path, config: str) -> None:
    site = _site(tmp_path, hook=None, config=config)
    settings = site_settings(site / "content", _manual(site))
    verdicts = page_verdicts(settings, "templates/introduction.md")
    assert verdicts["methods/site/title/"] is True and verdicts["g"] is False


def test_a_themes_hook_serves_when_the_site_has_none(tmp_path: Path) -> None:
    site = _site(tmp_path, hook=None, config="theme = 'docs'\n")
    write_tree(site, {"themes/docs/layouts/_default/_markup/render-link.html": HOOK})
    settings = site_settings(site / "content", _manual(site))
    assert page_verdicts(settings, "templates/introduction.md")["g"] is None


def test_a_changed_hook_is_read_at_the_next_refresh(tmp_path: Path) -> None:
    site = _site(tmp_path)
    settings = site_settings(site / "content", _manual(site))
    assert page_verdicts(settings, "templates/introduction.md")["g"] is None
    (site / "layouts" / "_markup" / "render-link.html").write_text("<a href='{{ .Destination }}'>x</a>\n")
    assert page_verdicts(settings, "templates/introduction.md")["g"] is False


def test_a_hook_linked_in_from_outside_the_site_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    write_tree(outside, {"render-link.html": HOOK})
    site = _site(tmp_path, hook=None)
    (site / "layouts").mkdir()
    (site / "layouts" / "_markup").symlink_to(outside)
    assert detect_site(site / "content").link_keywords == ()


def test_a_hostile_hook_is_read_in_bounded_time(tmp_path: Path) -> None:
    names = "".join(f"{{{{ $v{i} := .Destination }}}}" for i in range(500))
    compare = '{{ if eq $v1.String "' + "a" * 5000 + '" }}' + '{{ eq .Destination "' * 20000
    site = _site(tmp_path, hook=names + compare + "{{ if eq .Destination `ok` }}{{ end }}")
    started = time.process_time()
    found = detect_site(site / "content").link_keywords
    assert time.process_time() - started < 2.0
    # A literal longer than a destination is none; what is read of a template, and of its
    # comparisons, is bounded (the file is past the head read, `ok` at its end is not seen).
    assert "a" * 5000 not in found and len(found) <= 100 and "ok" not in found


@pytest.mark.parametrize(
    ("config", "finds"),
    [
        # `useEmbedded = "auto"`, Hugo's default: on for a multilingual site served from one host...
        ("[languages.en]\nweight = 1\n[languages.de]\nweight = 2\n", True),
        # ... unless each language has a host of its own, or page resources are duplicated per language.
        ("[languages.en]\nbaseURL = 'https://en.x/'\n[languages.de]\nbaseURL = 'https://de.x/'\n", False),
        ("[markup.goldmark]\nduplicateResourceFiles = true\n[languages.en]\n[languages.de]\n", False),
        ("[languages.en]\n", False),
        (
            "[markup.goldmark.renderHooks.link]\nuseEmbedded = 'never'\n[languages.en]\n[languages.de]\n",
            False,
        ),
    ],
)
def test_hugos_embedded_hook_by_default(tmp_path: Path, config: str, finds: bool) -> None:
    site = _site(tmp_path, hook=None, config="baseURL = 'https://x.dev/'\n" + config)
    assert detect_site(site / "content").hook_pages is finds


def test_a_site_hook_over_useembedded_fallback_and_never(tmp_path: Path) -> None:
    plain = "<a href='{{ .Destination }}'>{{ .Text }}</a>\n"
    for uses in ("fallback", "never"):
        site = _site(
            tmp_path / uses,
            hook=plain,
            config=f"[markup.goldmark.renderHooks.link]\nuseEmbedded = '{uses}'\n",
        )
        assert detect_site(site / "content").hook_pages is False, uses  # the site's hook, which finds nothing
    site = _site(
        tmp_path / "always", hook=plain, config="[markup.goldmark.renderHooks.link]\nuseEmbedded = 'always'\n"
    )
    assert detect_site(site / "content").hook_pages is True


def test_a_changed_hook_of_the_theme_in_use_is_read_whatever_the_themes_order(tmp_path: Path) -> None:
    from udm.site.routes import site_for

    site = _site(tmp_path, hook=None, config="theme = ['zeta', 'alpha']\n")
    write_tree(
        site,
        {
            "themes/zeta/layouts/_markup/render-link.html": HOOK,
            "themes/alpha/layouts/_markup/render-link.html": "{{ if eq .Destination `a` }}{{ end }}\n",
        },
    )
    (site / "content").mkdir()
    assert site_for(site / "content").link_keywords == ("g", "terms")  # zeta's: first in the config
    (site / "themes" / "zeta" / "layouts" / "_markup" / "render-link.html").write_text(
        "{{ if eq .Destination `z` }}{{ end }}\n"
    )
    assert site_for(site / "content").link_keywords == ("z",)
