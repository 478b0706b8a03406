"""The model of a verification spec: checks (steps + expectations), spec files, and its JSON Schema.

Reading specs and ```verify blocks into these models is `udm.verify.spec`; running them is
`tasks.browser.verify`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

__all__ = [
    "AttributeExpect",
    "Check",
    "CheckProblem",
    "CountExpect",
    "Expectation",
    "MatchExpect",
    "ScreenshotExpect",
    "Step",
    "TextExpect",
    "VerifySpec",
    "spec_json_schema",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class MatchExpect(_Strict):
    """A string test: exactly one of equals, contains, matches (a regular expression)."""

    equals: str | None = Field(default=None, description="The whole value, after trimming whitespace.")
    contains: str | None = Field(default=None, description="A substring of the value.")
    matches: str | None = Field(default=None, description="A regular expression searched in the value.")

    @model_validator(mode="after")
    def _exactly_one(self) -> MatchExpect:
        given = [k for k in ("equals", "contains", "matches") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of equals, contains, matches")
        if self.matches is not None:
            try:
                re.compile(self.matches)
            except re.error as exc:
                raise ValueError(f"matches is not a valid regular expression: {exc}") from exc
        return self

    def test(self, value: str | None) -> bool:
        """Whether a value passes."""
        if value is None:
            return False
        if self.equals is not None:
            return value.strip() == self.equals.strip()
        if self.contains is not None:
            return self.contains in value
        return re.search(self.matches or "", value) is not None

    def describe(self) -> str:
        """'contains "x"' and the like, for reasons."""
        for key in ("equals", "contains", "matches"):
            if getattr(self, key) is not None:
                return f'{key} "{getattr(self, key)}"'
        return ""


class TextExpect(MatchExpect):
    """The visible text of the first element matching `selector`."""

    selector: str = Field(min_length=1, description="CSS selector (XPath with an 'xpath=' prefix).")


class AttributeExpect(MatchExpect):
    """An attribute of the first element matching `selector`."""

    selector: str = Field(min_length=1, description="CSS selector (XPath with an 'xpath=' prefix).")
    name: str = Field(min_length=1, description="Attribute name.")


class CountExpect(_Strict):
    """How many elements match `selector`: exactly `equals`, or at least `min` and at most `max`."""

    selector: str = Field(min_length=1, description="CSS selector (XPath with an 'xpath=' prefix).")
    equals: int | None = Field(default=None, ge=0, description="Exactly this many.")
    min: int | None = Field(default=None, ge=0, description="At least this many.")
    max: int | None = Field(default=None, ge=0, description="At most this many.")

    @model_validator(mode="after")
    def _one_bound(self) -> CountExpect:
        if (self.equals is None) == (self.min is None and self.max is None):
            raise ValueError("give equals, or min and/or max")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is more than max {self.max}")
        return self

    def test(self, value: int | None) -> bool:
        """Whether a count passes."""
        if value is None:
            return False
        if self.equals is not None:
            return value == self.equals
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    def describe(self) -> str:
        """'equals 3', 'between 1 and 5' and the like, for reasons."""
        if self.equals is not None:
            return f"equals {self.equals}"
        if self.max is None:
            return f"at least {self.min}"
        if self.min is None:
            return f"at most {self.max}"
        return f"between {self.min} and {self.max}"


class ScreenshotExpect(_Strict):
    """The page (or an element) must look like a baseline image."""

    baseline: str = Field(
        min_length=1, description="Baseline PNG, relative to the spec file (created on the first run)."
    )
    max_variation: float = Field(
        default=0.01,
        ge=0,
        le=1,
        alias="maxVariation",
        description="Largest share of differing pixels that still passes (0.02 = 2%).",
    )
    fail_variation: float | None = Field(
        default=None,
        ge=0,
        le=1,
        alias="failVariation",
        description="Hard limit: between maxVariation and this is a WARNING, above it FAIL (default: no band).",
    )
    pixel_threshold: int = Field(
        default=24,
        ge=0,
        le=255,
        alias="pixelThreshold",
        description="A pixel differs when a channel differs by more than this (anti-aliasing noise).",
    )
    full_page: bool = Field(default=False, alias="fullPage", description="Compare the whole page.")
    selector: str | None = Field(default=None, min_length=1, description="Compare only this element.")


class Expectation(_Strict):
    """One expectation; exactly one key is set.

    text, attribute, count, url and title retry until they hold or the check's timeout passes (as
    Playwright's `expect` does); the failure names the last value seen.
    """

    exists: str | None = Field(default=None, min_length=1, description="A selector that must match.")
    absent: str | None = Field(default=None, min_length=1, description="A selector that must not match.")
    text: TextExpect | None = Field(default=None, description="Text of an element.")
    attribute: AttributeExpect | None = Field(default=None, description="Attribute of an element.")
    count: CountExpect | None = Field(default=None, description="How many elements match a selector.")
    url: MatchExpect | None = Field(default=None, description="The tab's final URL.")
    title: MatchExpect | None = Field(default=None, description="The page title.")
    status: int | None = Field(default=None, ge=100, le=599, description="HTTP status of the main document.")
    screenshot: ScreenshotExpect | None = Field(
        default=None, description="Visual comparison with a baseline."
    )

    @model_validator(mode="before")
    @classmethod
    def _url_shorthand(cls, value: Any) -> Any:
        # `{url: "/home"}` and `{title: "X"}` mean "contains".
        if isinstance(value, dict):
            value = dict(value)
            for key in ("url", "title"):
                if isinstance(value.get(key), str):
                    value[key] = {"contains": value[key]}
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> Expectation:
        given = [k for k in type(self).model_fields if getattr(self, k) is not None]
        if len(given) != 1:
            keys = ", ".join(type(self).model_fields)
            raise ValueError(f"an expectation has exactly one of: {keys} (got {', '.join(given) or 'none'})")
        return self

    @property
    def kind(self) -> str:
        """Which key is set."""
        return next(k for k in type(self).model_fields if getattr(self, k) is not None)


class Step(_Strict):
    """One tool call, run in the check's own browser session."""

    tool: str = Field(
        min_length=1, description="A browser tool's name (typeText, click, wait_for_element ...)."
    )
    input: dict[str, Any] = Field(
        default_factory=dict, description="The tool's input (session_id is set for you)."
    )


class Check(_Strict):
    """A verification check."""

    id: str = Field(
        min_length=1, max_length=120, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$", description="Check ID."
    )
    udm_refs: list[str] = Field(
        default_factory=list, description="UDM IDs or sections whose claim this tests."
    )
    description: str | None = Field(default=None, description="What the check shows, in words.")
    url: str | None = Field(
        default=None,
        min_length=1,
        description="Page to open first (absolute, ${BASE_URL}/..., or /relative).",
    )
    steps: list[Step] = Field(default_factory=list, description="Tool calls after opening the URL.")
    expect: list[Expectation] = Field(default_factory=list, description="What must hold afterwards.")
    timeout: float | None = Field(
        default=None, gt=0, le=600, description="Per-action timeout in seconds (default: browser_timeout_s)."
    )
    retries: int = Field(default=0, ge=0, le=10, description="Extra attempts before a failure counts.")
    skip: str | bool | None = Field(default=None, description="Skip this check (a string says why).")
    viewport: dict[str, int] | None = Field(default=None, description="width and height of the page, pixels.")
    source: str | None = Field(
        default=None, description="Where the check is defined (file:line); set on load."
    )
    section: str | None = Field(default=None, description="file#anchor of the UDM section (inline checks).")
    block: list[Literal["font", "media", "image", "stylesheet"]] | None = Field(
        default=None,
        description="Resource types the page loads without (default: font and media; none when the "
        "check compares screenshots).",
    )
    hosts: list[str] | None = Field(
        default=None,
        description="Hosts subresources may come from besides the page's own (default: none; ['*']: any). "
        "Navigations may go anywhere the SSRF guard allows.",
    )
    evidence: Literal["failure", "always"] = Field(
        default="failure", description="When to keep a final screenshot: on failure (default) or always."
    )
    _base_dir: Path | None = PrivateAttr(default=None)
    # A ```verify block of the manual (untrusted input): its baseline goes through the tools' sandbox.
    _in_manual: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _has_work(self) -> Check:
        if not self.url and not self.steps:
            raise ValueError("a check needs a url or steps")
        return self

    @property
    def base_dir(self) -> Path | None:
        """Folder that relative baselines resolve against (the spec file's, or the UDM file's)."""
        return self._base_dir

    @property
    def in_manual(self) -> bool:
        """Whether the check comes from a ```verify block of the manual rather than a spec file."""
        return self._in_manual


class VerifySpec(_Strict):
    """A spec file: checks plus optional defaults."""

    base_url: str | None = Field(
        default=None, description="Default base URL for relative URLs and ${BASE_URL}."
    )
    vars: dict[str, str] = Field(default_factory=dict, description="Values for ${NAME} placeholders.")
    checks: list[Check] = Field(description="The checks.")


@dataclass(frozen=True)
class CheckProblem:
    """A check that could not be read (bad YAML, unknown key ...); reported as a FAIL row."""

    source: str
    message: str
    udm_refs: tuple[str, ...] = ()


def spec_json_schema() -> dict[str, Any]:
    """The published JSON Schema of a verification spec file."""
    schema = VerifySpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "UDM verification spec"
    return schema
