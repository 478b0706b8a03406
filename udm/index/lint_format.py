"""Lint reports in the formats CI systems read: text, JSON, SARIF 2.1.0, JUnit XML, GitHub annotations.

Paths in SARIF, JUnit and GitHub output are relative to the project root (the working directory)
when the manual lies under it, so code scanning and annotations find the files in the repository.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import PurePosixPath
from xml.etree import ElementTree as ET

from udm.index.lint_rules import RULES, Finding
from udm.shown import json_shown, shown, shown_line

__all__ = ["FORMATS", "SARIF_SCHEMA", "render"]

FORMATS = ("text", "json", "sarif", "junit", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_TOOL = "udm-lint"


def _version() -> str:
    try:
        return version("udm-pipelines")
    except PackageNotFoundError:
        return "0"


def _path(prefix: str, file: str) -> str:
    """A finding's file from the project root: normalised, since a site config may lie above the
    manual (`docs/../mkdocs.yml` is `mkdocs.yml`); an absolute one (a config outside) as it is."""
    if posixpath.isabs(file):
        return file
    return posixpath.normpath(f"{prefix.rstrip('/')}/{file}") if prefix else posixpath.normpath(file)


def _uri(prefix: str, file: str) -> str:
    """SARIF's artifact URI: relative to the project, or a `file://` URI for a file outside it."""
    path = _path(prefix, file)
    return PurePosixPath(path).as_uri() if posixpath.isabs(path) else path


def _counts(findings: Sequence[Finding]) -> tuple[int, int]:
    errors = sum(1 for f in findings if f.severity == "error")
    return errors, len(findings) - errors


def render(findings: Sequence[Finding], fmt: str, *, prefix: str = "") -> str:
    """The findings as one report in `fmt` (see FORMATS); `prefix` is the manual's path in the repository."""
    if fmt == "text":
        # A finding quotes the manual's text (a heading, a target, a file name): one line each, its
        # escape sequences and bidi characters shown, not acted on by the terminal or CI log.
        return "".join(f"{shown_line(str(f))}\n" for f in findings)
    if fmt == "json":
        errors, warnings = _counts(findings)
        data = {
            "errors": errors,
            "warnings": warnings,
            "findings": [{**f.as_dict(), "path": _path(prefix, f.file)} for f in findings],
        }
        return json_shown(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"
    if fmt == "sarif":
        return json_shown(json.dumps(_sarif(findings, prefix), indent=2, ensure_ascii=False)) + "\n"
    if fmt == "junit":
        return _junit(findings, prefix)
    if fmt == "github":
        return "".join(_annotation(f, prefix) + "\n" for f in findings)
    raise ValueError(f"unknown lint format {fmt!r}: expected one of {', '.join(FORMATS)}")


def _sarif(findings: Sequence[Finding], prefix: str) -> dict[str, object]:
    rule_ids = list(RULES)
    return {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": _TOOL,
                        "version": _version(),
                        "rules": [
                            {
                                "id": rule,
                                "name": rule,
                                "shortDescription": {"text": text},
                                "defaultConfiguration": {"level": severity},
                            }
                            for rule, (severity, text) in RULES.items()
                        ],
                    }
                },
                "results": [
                    {
                        "ruleId": f.rule,
                        "ruleIndex": rule_ids.index(f.rule),
                        "level": "error" if f.severity == "error" else "warning",
                        "message": {"text": f.message},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": _uri(prefix, f.file)},
                                    "region": {"startLine": max(1, f.line)},
                                }
                            }
                        ],
                    }
                    for f in findings
                ],
            }
        ],
    }


def _junit(findings: Sequence[Finding], prefix: str) -> str:
    """One test suite per file with findings, one failing test case per finding (one passing case if clean)."""
    errors, warnings = _counts(findings)
    suites = ET.Element(
        "testsuites", name=_TOOL, tests=str(max(1, len(findings))), failures=str(len(findings))
    )
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.file, []).append(f)
    if not by_file:
        suite = ET.SubElement(
            suites, "testsuite", name=_TOOL, tests="1", failures="0", errors="0", skipped="0"
        )
        ET.SubElement(suite, "testcase", classname=_TOOL, name="no findings")
    for file, items in by_file.items():
        # XML 1.0 holds no control character but tab and line breaks, nor a lone surrogate: shown.
        path = shown_line(_path(prefix, file))
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=path,
            tests=str(len(items)),
            failures=str(len(items)),
            errors="0",
            skipped="0",
        )
        for f in items:
            case = ET.SubElement(
                suite, "testcase", classname=path, name=f"{f.rule} at line {f.line}", file=path
            )
            case.set("line", str(f.line))
            message = shown(f.message)
            failure = ET.SubElement(case, "failure", message=message, type=f.severity)
            failure.text = f"{path}:{f.line}: {f.severity}: {message} [{f.rule}]"
    ET.indent(suites)
    body = ET.tostring(suites, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<!-- {errors} errors, {warnings} warnings -->\n{body}\n'


def _escape_data(text: str) -> str:
    # GitHub's workflow-command escaping: the message, then (with more) the properties.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(f: Finding, prefix: str) -> str:
    level = "error" if f.severity == "error" else "warning"
    # The runner's log shows the line and acts on escape sequences: the text is shown (`\x1b`) first.
    path = _escape_property(shown(_path(prefix, f.file)))
    props = f"file={path},line={max(1, f.line)},title={_escape_property(f.rule)}"
    return f"::{level} {props}::{_escape_data(shown(f.message))}"
