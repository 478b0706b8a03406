"""The types of settings values: the approval policy, the default ID patterns, and the checked field
types (comma-separated lists, suffixes, lint maps, named choices).

Each check is part of a field's type (`Annotated[..., BeforeValidator(...)]`), so `udm.config.Settings`
declares only the fields; a failed check is a ValueError that `load_settings` reports through
`config_error`, naming the setting.
"""

from __future__ import annotations

import json
import tomllib
import unicodedata
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ValidationError
from pydantic_settings import NoDecode, SettingsError

from udm.errors import ConfigError
from udm.shown import shown_line, utf8_name

__all__ = [
    "DEFAULT_ID_PATTERNS",
    "GENERATORS",
    "ApprovalPolicy",
    "CommaPaths",
    "CommaStrings",
    "ConfigFile",
    "FailOn",
    "LintIgnore",
    "LintRules",
    "SiteGenerator",
    "Suffixes",
    "TaskRunner",
    "config_error",
]


class ApprovalPolicy(StrEnum):
    """How eagerly tool calls are approved (see `tasks.base.needs_approval`)."""

    ASK_ALWAYS = "ask_always"
    SMART_AUTO = "smart_auto"
    FULL_AUTO = "full_auto"


# One alternation per family of the manual; ordered so the longest family wins at a position.
DEFAULT_ID_PATTERNS: list[str] = [
    r"TASK-P\d+-M\d+(?:\.\d+)*-T\d+",
    r"API-[A-Z]+-\d+-v\d+",
    r"APP-[A-Z0-9]+(?:-[A-Z0-9]+)*-RESEARCH-V\d+",
    r"ROO-MODE-[A-Z0-9]+(?:-[A-Z0-9]+)*",
    r"CHK-[A-Z0-9]+(?:-[A-Z0-9]+)*",
    r"(?:COMP|RM|REQ|ADR|RISK|DEC|TOOL|CFG|MS|PH|TEST|SEC|NFR|UC|US|FR|BUG|INC)-\d+(?:\.\d+)*",
    # Any other UPPER-CASE family with digits (PROJ-12, DOC-API-3-V2); lint only reports undefined
    # references of families that have at least one definition, so UTF-8 and SHA-256 stay quiet.
    r"[A-Z][A-Z0-9]+(?:-[A-Z][A-Z0-9]*)*-[A-Za-z]?\d+(?:\.\d+)*(?:-[A-Za-z]*\d+(?:\.\d+)*)*",
]


# The site generators whose conventions links resolve by (udm.site); the setting may also be "auto".
GENERATORS = (
    "none",
    "docusaurus",
    "mintlify",
    "mkdocs",
    "mdbook",
    "hugo",
    "starlight",
    "vitepress",
    "jekyll",
    "myst",
    "fumadocs",
    "nextra",
    "rspress",
    "vuepress",
    "docsify",
    "zola",
    "gitbook",
)
SITE_GENERATORS = ("auto", *GENERATORS)


def split_commas(value: Any) -> Any:
    """A list given as one string (an environment variable): comma-separated, or a JSON list."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            return json.loads(stripped)
        return [part.strip() for part in stripped.split(",") if part.strip()]
    return value


def _suffixes(value: list[str]) -> list[str]:
    # Matched against lower-cased file names: '.MD', 'md' and '.md' all mean '.md'.
    out = ["." + v.strip().lower().lstrip(".") for v in value if v.strip().strip(".")]
    if not out:
        raise ValueError("markdown_suffixes needs at least one suffix, e.g. .md")
    bad = next((v for v in out if not utf8_name(v)), None)
    if bad is not None:
        # A suffix is stored with the index's lookup and matched against names that are valid UTF-8.
        raise ValueError(f"the suffix {shown_line(bad)} is not valid UTF-8")
    return out


def _task_runner(value: str) -> str:
    if value not in ("threads", "dask"):
        raise ValueError(f"task_runner must be 'threads' or 'dask', not {value!r}")
    return value


def _choice(allowed: tuple[str, ...], expected: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(expected)
        return value

    return check


def _severities(value: dict[str, str]) -> dict[str, str]:
    for rule, severity in value.items():
        if severity not in ("error", "warning", "off"):
            raise ValueError(f"rule {rule}: severity {severity!r} is not error, warning or off")
    return value


def _config_file(value: str | None) -> str | None:
    """A file setting (`site_config`) that can name a file: no NUL or control character, names of at
    most 255 bytes, and a `~user` that exists; checked when the settings load, so a bad one is an error
    naming the setting, never a traceback of the first command that opens it."""
    if value is None:
        return None
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf")), None)
    if bad is not None:
        raise ValueError(f"holds the control character U+{ord(bad):04X}; a path cannot")
    if len(value.encode("utf-8", "surrogateescape")) > 4096:
        raise ValueError("is longer than 4096 bytes")
    long = next(
        (part for part in value.split("/") if len(part.encode("utf-8", "surrogateescape")) > 255), None
    )
    if long is not None:
        raise ValueError(f"has a name longer than 255 bytes ({long[:20]}...)")
    try:
        Path(value).expanduser()
    except RuntimeError as exc:  # `~nobody/x`: no such user
        raise ValueError(f"starts with a home folder that cannot be found ({exc})") from None
    return value


def _globs_ignore_all(value: Any) -> Any:
    # A plain list of globs (or one comma-separated string) ignores every rule in those paths.
    if isinstance(value, str) and not value.strip().startswith(("{", "[")):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, list):
        return {str(glob): ["*"] for glob in value}
    return value


# Environment variables carry lists as comma-separated strings; JSON lists pass through.
CommaStrings = Annotated[list[str], NoDecode, BeforeValidator(split_commas)]
CommaPaths = Annotated[list[Path], NoDecode, BeforeValidator(split_commas)]
Suffixes = Annotated[list[str], NoDecode, BeforeValidator(split_commas), AfterValidator(_suffixes)]
TaskRunner = Annotated[str, AfterValidator(_task_runner)]
SiteGenerator = Annotated[
    str, AfterValidator(_choice(SITE_GENERATORS, f"expected one of {', '.join(SITE_GENERATORS)}"))
]
FailOn = Annotated[
    str, AfterValidator(_choice(("error", "warning", "never"), "expected error, warning or never"))
]
LintRules = Annotated[dict[str, str], AfterValidator(_severities)]
ConfigFile = Annotated[str | None, AfterValidator(_config_file)]
# NoDecode: the environment's text reaches the validator, which reads a JSON object or list itself and
# also takes plain comma-separated globs.
LintIgnore = Annotated[dict[str, list[str]], NoDecode, BeforeValidator(_globs_ignore_all)]


def config_error(exc: ValidationError | SettingsError | tomllib.TOMLDecodeError, base: Path) -> ConfigError:
    """What was wrong with the settings read in `base`, as a ConfigError naming each bad setting."""
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"'{'.'.join(str(x) for x in err['loc']) or '(settings)'}': {err['msg']}" for err in exc.errors()
        )
        return ConfigError(
            f"invalid setting {problems} (from an option, UDM_* environment variable, udm.toml or "
            "[tool.udm] in pyproject.toml)"
        )
    if isinstance(exc, SettingsError):
        # A structured setting (a JSON list or object) from the environment that does not parse.
        cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
        return ConfigError(f"invalid setting: {exc}{cause}; a UDM_* variable of a list or map holds JSON")
    return ConfigError(f"udm.toml or pyproject.toml in {base} is not valid TOML: {exc}")
