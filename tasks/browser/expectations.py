"""The expectations of a verification check: evaluated on its page, waiting as Playwright's `expect` does.

Text, attribute, count, URL and title expectations read their value until it passes or the check's
timeout ends; a failure names the last value seen. Visual expectations compare a screenshot with a
baseline PNG (Pillow) and write a diff image when it differs; a baseline of the manual's own ```verify
blocks is read and written only through the tools' sandbox.
"""

from __future__ import annotations

import asyncio
import io
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator, Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from tasks.browser.actions import ActionError, pw_selector, timeout_message
from tasks.browser.common import write_atomic
from tasks.browser.session import Session
from udm.config import Settings
from udm.errors import UdmError
from udm.guard import tool_sandbox
from udm.verify import Check, Expectation, substitute

__all__ = ["Attempt", "compare_images", "safe_name"]


# A baseline larger than this is not an image a check compares with.
_MAX_BASELINE_BYTES = 64 * 1024 * 1024


def _manual_baseline(settings: Settings, baseline: Path, shot: bytes) -> bytes | None:
    """The bytes of a manual check's baseline, through the tools' sandbox; None after saving `shot` there."""
    box = tool_sandbox(settings)
    try:
        read = box.read(baseline, max_bytes=_MAX_BASELINE_BYTES)
    except FileNotFoundError:
        box.mkdir(baseline.parent, parents=True)
        box.write(baseline, shot)
        return None
    if read.truncated:
        raise ValueError(f"larger than {_MAX_BASELINE_BYTES} bytes")
    return read.data


def compare_images(actual: bytes, baseline: Path | bytes, threshold: int) -> tuple[float, Image.Image | None]:
    """Share of differing pixels (0..1) and a diff image (changed pixels red over a dimmed copy)."""
    source = io.BytesIO(baseline) if isinstance(baseline, bytes) else baseline
    with Image.open(io.BytesIO(actual)) as a_raw, Image.open(source) as b_raw:
        a, b = a_raw.convert("RGB"), b_raw.convert("RGB")
    width, height = max(a.width, b.width), max(a.height, b.height)
    if a.size != b.size:
        # Missing area counts as different: pad both to the same canvas with a colour nothing uses.
        pad_a, pad_b = (
            Image.new("RGB", (width, height), (255, 0, 255)),
            Image.new("RGB", (width, height), (0, 255, 0)),
        )
        pad_a.paste(a)
        pad_b.paste(b)
        a, b = pad_a, pad_b
    r, g, bl = ImageChops.difference(a, b).split()
    strongest = ImageChops.lighter(ImageChops.lighter(r, g), bl)
    mask = strongest.point(lambda v: 255 if v > threshold else 0)
    changed = mask.histogram()[255]
    variation = changed / float(width * height)
    if changed == 0:
        return 0.0, None
    diff = Image.blend(a.convert("L").convert("RGB"), Image.new("RGB", a.size, (255, 255, 255)), 0.6)
    diff.paste((255, 0, 0), mask=mask)
    return variation, diff


class Attempt:
    """State of one attempt of one check: its session, and the failures and warnings found so far."""

    def __init__(
        self, check: Check, session: Session, settings: Settings, timeout_s: float, evidence: Path
    ) -> None:
        self.check = check
        self.session = session
        self.settings = settings
        self.timeout_s = timeout_s
        self.evidence = evidence
        self.failures: list[str] = []
        self.warnings: list[str] = []
        self.diff_image: str | None = None

    def page(self) -> Page:
        """The attempt's page: the session's active tab."""
        return self.session.page()[1]

    async def expect(self, n: int, exp: Expectation, variables: dict[str, str]) -> None:
        """Evaluate one expectation, adding a failure or warning when it does not hold."""
        label = f"expect[{n}] {exp.kind}"
        page = self.page()
        ms = self.timeout_s * 1000
        try:
            if exp.exists is not None:
                await self._attached(page, label, substitute(exp.exists, variables), ms)
            elif exp.absent is not None:
                sel = substitute(exp.absent, variables)
                try:
                    await page.locator(pw_selector(sel)).first.wait_for(state="detached", timeout=ms)
                except PlaywrightTimeoutError:
                    count = await page.locator(pw_selector(sel)).count()
                    self.failures.append(f"{label}: '{sel}' is still present ({count} matching)")
            elif exp.text is not None:
                sel = substitute(exp.text.selector, variables)
                target = page.locator(pw_selector(sel)).first
                await self._until(label, f"text of '{sel}'", exp.text, _reader(target, _inner_text), sel)
            elif exp.attribute is not None:
                sel, name = substitute(exp.attribute.selector, variables), exp.attribute.name
                target = page.locator(pw_selector(sel)).first
                read = _reader(target, lambda t: t.get_attribute(name, timeout=_READ_MS))
                await self._until(label, f"{name} of '{sel}'", exp.attribute, read, sel)
            elif exp.count is not None:
                sel = substitute(exp.count.selector, variables)
                matches = page.locator(pw_selector(sel))
                await self._until(label, f"count of '{sel}'", exp.count, matches.count)
            elif exp.url is not None:
                matcher = exp.url.model_copy(
                    update=substitute(exp.url.model_dump(exclude_none=True), variables)
                )

                async def url() -> str:
                    return page.url

                await self._until(label, "url", matcher, url)
            elif exp.title is not None:
                await self._until(label, "title", exp.title, page.title)
            elif exp.status is not None:
                status = self.session.last_status.get(self.session.active or 0)
                if status != exp.status:
                    self.failures.append(f"{label}: HTTP status is {status}, expected {exp.status}")
            elif exp.screenshot is not None:
                await self._visual(label, exp)
        except ActionError as exc:
            self.failures.append(f"{label}: {exc.message}")

    async def _until(
        self,
        label: str,
        what: str,
        matcher: Any,
        read: Callable[[], Awaitable[Any]],
        selector: str | None = None,
    ) -> None:
        """Read a value until `matcher.test` passes or the timeout ends; a failure names the last value.

        As Playwright's `expect`: the first read is immediate, then again after 100, 250 and 500 ms
        and every second, so a value a page sets after load passes as soon as it appears.
        """
        deadline = time.monotonic() + self.timeout_s
        pauses = iter(_POLL_PAUSES_S)
        value: Any = _MISSING
        while True:
            try:
                value = await read()
            except PlaywrightError:
                # The element went away between finding and reading it, or the page is navigating.
                value = _MISSING
            if value is not _MISSING and matcher.test(value):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.sleep(min(next(pauses, 1.0), left))
        if value is _MISSING and selector is not None:
            self.failures.append(f"{label}: {timeout_message(self.timeout_s, f'selector {selector!r}')}")
            return
        shown = value if isinstance(value, int) else _quote(value)
        self.failures.append(
            f"{label}: {what} is {shown}, expected it {matcher.describe()} "
            f"(last value seen, after waiting {self.timeout_s:g} s)"
        )

    async def _attached(self, page: Page, label: str, sel: str, ms: float) -> Locator | None:
        """The first match of `sel` once attached; None, with a timeout failure recorded, if it never is."""
        target = page.locator(pw_selector(sel)).first
        try:
            await target.wait_for(state="attached", timeout=ms)
        except PlaywrightTimeoutError:
            self.failures.append(f"{label}: {timeout_message(self.timeout_s, f'selector {sel!r}')}")
            return None
        return target

    async def _visual(self, label: str, exp: Expectation) -> None:
        spec = exp.screenshot
        assert spec is not None
        page = self.page()
        if spec.selector:
            shot = await page.locator(pw_selector(spec.selector)).first.screenshot(
                timeout=self.timeout_s * 1000
            )
        else:
            shot = await page.screenshot(full_page=spec.full_page, timeout=self.timeout_s * 1000)
        baseline = Path(spec.baseline)
        if not baseline.is_absolute():
            baseline = (self.check.base_dir or self.settings.project_root) / baseline
        reference: Path | bytes = baseline
        if self.check.in_manual:
            # The manual is untrusted: its baseline is read and written only where a tool could.
            try:
                stored = _manual_baseline(self.settings, baseline, shot)
            except (UdmError, OSError, ValueError) as exc:
                self.failures.append(f"{label}: baseline {spec.baseline!r} refused: {exc}")
                return
            if stored is None:
                self.warnings.append(f"{label}: no baseline yet; saved this screenshot as {baseline}")
                return
            reference = stored
        elif not baseline.exists():
            baseline.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(baseline, shot)
            self.warnings.append(f"{label}: no baseline yet; saved this screenshot as {baseline}")
            return
        variation, diff = compare_images(shot, reference, spec.pixel_threshold)
        if variation <= spec.max_variation:
            return
        if diff is not None:
            path = self.evidence / f"{safe_name(self.check.id)}-diff.png"
            buf = io.BytesIO()
            diff.save(buf, format="PNG")
            write_atomic(path, buf.getvalue())
            self.diff_image = str(path)
        text = f"{label}: {variation:.2%} of pixels differ from {baseline.name} (maxVariation {spec.max_variation:.2%})"
        if spec.fail_variation is not None and variation <= spec.fail_variation:
            self.warnings.append(text + f", under the hard limit {spec.fail_variation:.2%}")
        else:
            self.failures.append(text)


# Pauses between reads of a waiting expectation (then 1 s each), as Playwright's expect polls.
_POLL_PAUSES_S = (0.1, 0.25, 0.5)
# A read of an element that is there answers at once; this only bounds a read of one that vanished.
_READ_MS = 1000
_MISSING: Any = object()


async def _inner_text(target: Locator) -> str:
    return await target.inner_text(timeout=_READ_MS)


def _reader(target: Locator, read: Callable[[Locator], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    """A read of the first match that gives _MISSING, without waiting, while nothing matches."""

    async def once() -> Any:
        if await target.count() == 0:
            return _MISSING
        return await read(target)

    return once


def _quote(value: str | None) -> str:
    if value is None:
        return "missing"
    text = " ".join(value.split())
    return repr(text if len(text) <= 120 else text[:117] + "...")


def safe_name(text: str) -> str:
    """`text` as a file-name part: odd characters replaced, at most 100 long."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:100]
