"""Data-extraction tools: extract_text/links/data/table/form, get_element_info, screenshot."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tasks.base import Permission
from tasks.browser.actions import ActionError
from tasks.browser.agent_actions import ScreenshotOutput
from tasks.browser.automation import CssInput
from tasks.browser.common import (
    BrowserOutput,
    BrowserTool,
    Call,
    PageInput,
    SelectorType,
    locate,
    save_screenshot,
)

__all__ = [
    "LINKS_JS",
    "ExtractDataTool",
    "ExtractFormTool",
    "ExtractLinksTool",
    "ExtractTableTool",
    "ExtractTextTool",
    "GetElementInfoTool",
    "ScreenshotTool",
]

LINKS_JS = """els => els.map(a => ({
  text: (a.innerText || a.textContent || '').trim().replace(/\\s+/g, ' '),
  href: a.href || a.getAttribute('href') || '',
  title: a.getAttribute('title'),
  target: a.getAttribute('target'),
}))"""

TABLE_JS = """t => {
  const clean = c => (c.innerText || c.textContent || '').trim().replace(/\\s+/g, ' ');
  const rows = Array.from(t.rows);
  let headers = [];
  let start = 0;
  const head = t.tHead && t.tHead.rows.length ? t.tHead.rows[0] : null;
  if (head) { headers = Array.from(head.cells).map(clean); start = rows.indexOf(head) + 1; }
  else if (rows.length && Array.from(rows[0].cells).every(c => c.tagName === 'TH')) {
    headers = Array.from(rows[0].cells).map(clean); start = 1;
  }
  const body = rows.slice(start).filter(r => !(t.tHead && r.parentElement === t.tHead));
  const width = Math.max(headers.length, ...body.map(r => r.cells.length), 0);
  for (let i = 0; i < width; i++) if (!headers[i]) headers[i] = 'column_' + (i + 1);
  return {headers, rows: body.map(r => Object.fromEntries(Array.from(r.cells).map((c, i) => [headers[i], clean(c)])))};
}"""

FORM_JS = """f => ({
  action: f.action || null,
  method: (f.method || 'get').toLowerCase(),
  fields: Array.from(f.elements).filter(e => e.tagName !== 'FIELDSET' && e.tagName !== 'OBJECT').map(e => {
    const label = e.labels && e.labels.length ? e.labels[0].innerText.trim() : null;
    const type = e.tagName === 'SELECT' ? (e.multiple ? 'select-multiple' : 'select')
               : e.tagName === 'TEXTAREA' ? 'textarea' : e.tagName === 'BUTTON' ? 'button:' + e.type : (e.type || 'text');
    let value = e.value;
    if (e.type === 'checkbox' || e.type === 'radio') value = e.checked ? (e.value || 'on') : null;
    if (e.type === 'password') value = e.value ? '********' : '';
    return {
      name: e.name || e.id || null, type, value, label, required: !!e.required,
      options: e.tagName === 'SELECT' ? Array.from(e.options).map(o => ({value: o.value, label: o.text.trim(), selected: o.selected})) : null,
    };
  }),
})"""

INFO_JS = """e => {
  const r = e.getBoundingClientRect();
  const attrs = {};
  for (const a of e.attributes) attrs[a.name] = a.value;
  const s = window.getComputedStyle(e);
  return {
    tag: e.tagName.toLowerCase(), text: (e.innerText || e.textContent || '').trim(), attributes: attrs,
    bounding_box: {x: r.x, y: r.y, width: r.width, height: r.height},
    visible: r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none',
  };
}"""


async def _require_match(call: Call, selector: str, selector_type: str = "css") -> Any:
    matches = locate(call.require_page(), selector, selector_type)
    count = await matches.count()
    if count == 0:
        raise ActionError("ERROR_ELEMENT_NOT_FOUND", f"no element matches selector '{selector}'")
    return matches


class ExtractTextOutput(BrowserOutput):
    """Texts of every match."""

    texts: list[str] = Field(default_factory=list, description="innerText of each matching element.")
    count: int = Field(default=0, description="How many elements matched.")


class ExtractTextTool(BrowserTool):
    """extract_text."""

    name = "extract_text"
    description = "Read the visible text of every element matching a CSS selector."
    Input = CssInput
    Output = ExtractTextOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """All innerTexts; no match is ERROR_ELEMENT_NOT_FOUND."""
        matches = await _require_match(call, call.data.selector, call.data.selector_type)
        texts = [t.strip() for t in await matches.all_inner_texts()]
        return {"texts": texts, "count": len(texts)}


class LinksInput(PageInput):
    """Input of extract_links."""

    selector: str = Field(default="a", min_length=1, description="CSS selector of the links.")
    selector_type: SelectorType = Field(default="css", description="css or xpath.")


class LinksOutput(BrowserOutput):
    """Links found."""

    links: list[dict[str, Any]] = Field(
        default_factory=list, description="text, absolute href, title, target."
    )
    count: int = Field(default=0, description="How many links.")


class ExtractLinksTool(BrowserTool):
    """extract_links."""

    name = "extract_links"
    description = "List the links (text and absolute URL) matching a CSS selector, default every <a>."
    Input = LinksInput
    Output = LinksOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Every match's text and href."""
        links = await call.matches().evaluate_all(LINKS_JS)
        return {"links": links, "count": len(links)}


class DataInput(CssInput):
    """Input of extract_data."""

    attributes: list[str] = Field(
        default_factory=list, description="HTML attributes to read from each element."
    )


class DataOutput(BrowserOutput):
    """Attributes of each match."""

    items: list[dict[str, Any]] = Field(
        default_factory=list, description="Per element: text and the attributes asked for."
    )
    count: int = Field(default=0, description="How many elements matched.")


class ExtractDataTool(BrowserTool):
    """extract_data."""

    name = "extract_data"
    description = "Read chosen attributes (and the text) of every element matching a CSS selector."
    Input = DataInput
    Output = DataOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Attributes per element (missing ones are null)."""
        items = await call.matches().evaluate_all(
            """(els, names) => els.map(e => ({
                 text: (e.innerText || e.textContent || '').trim(),
                 attributes: Object.fromEntries(names.map(n => [n, e.getAttribute(n)])),
               }))""",
            call.data.attributes,
        )
        return {"items": items, "count": len(items)}


class TableInput(PageInput):
    """Input of extract_table."""

    selector: str = Field(default="table", min_length=1, description="CSS selector of the table.")
    selector_type: SelectorType = Field(default="css", description="css or xpath.")


class TableOutput(BrowserOutput):
    """A table as rows keyed by header."""

    headers: list[str] = Field(default_factory=list, description="Column headers (column_N when missing).")
    rows: list[dict[str, str]] = Field(
        default_factory=list, description="One object per row, keyed by header."
    )
    row_count: int = Field(default=0, description="Number of body rows.")


class ExtractTableTool(BrowserTool):
    """extract_table."""

    name = "extract_table"
    description = "Read an HTML table as a list of rows, each an object keyed by the column headers."
    Input = TableInput
    Output = TableOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """The first matching table."""
        matches = await _require_match(call, call.data.selector, call.data.selector_type)
        table = await matches.first.evaluate(TABLE_JS)
        return {"headers": table["headers"], "rows": table["rows"], "row_count": len(table["rows"])}


class FormInput(PageInput):
    """Input of extract_form."""

    selector: str = Field(default="form", min_length=1, description="CSS selector of the form.")
    selector_type: SelectorType = Field(default="css", description="css or xpath.")


class FormOutput(BrowserOutput):
    """A form's fields."""

    action: str | None = Field(default=None, description="The form's action URL.")
    method: str | None = Field(default=None, description="get or post.")
    fields: list[dict[str, Any]] = Field(
        default_factory=list, description="name, type, value (passwords masked), label, required, options."
    )


class ExtractFormTool(BrowserTool):
    """extract_form."""

    name = "extract_form"
    description = "Describe a form: its action, method and fields (name, type, value, options)."
    Input = FormInput
    Output = FormOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """The first matching form."""
        matches = await _require_match(call, call.data.selector, call.data.selector_type)
        form = await matches.first.evaluate(FORM_JS)
        return {"action": form["action"], "method": form["method"], "fields": form["fields"]}


class InfoOutput(BrowserOutput):
    """Facts about one element."""

    tag: str | None = Field(default=None, description="Tag name.")
    text: str | None = Field(default=None, description="Visible text.")
    attributes: dict[str, str] = Field(default_factory=dict, description="Every attribute.")
    bounding_box: dict[str, float] | None = Field(
        default=None, description="x, y, width, height in CSS pixels."
    )
    visible: bool | None = Field(default=None, description="Whether it has a size and is not hidden.")
    count: int = Field(default=0, description="How many elements matched (the first is described).")


class GetElementInfoTool(BrowserTool):
    """get_element_info."""

    name = "get_element_info"
    description = (
        "Describe the first element matching a CSS selector: tag, text, attributes, position and size."
    )
    Input = CssInput
    Output = InfoOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Tag, text, attributes and bounding box."""
        matches = await _require_match(call, call.data.selector, call.data.selector_type)
        info = await matches.first.evaluate(INFO_JS)
        return {**info, "count": await matches.count()}


class ScreenshotInput(PageInput):
    """Input of screenshot."""

    full_page: bool = Field(default=False, description="Capture the whole scrollable page.")
    return_base64: bool = Field(default=False, description="Also return the PNG as base64 (for an LLM).")


class ScreenshotTool(BrowserTool):
    """screenshot."""

    name = "screenshot"
    description = (
        "Screenshot the active tab into a PNG file under <state>/screenshots/ (base64 only on request)."
    )
    Input = ScreenshotInput
    Output = ScreenshotOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Capture."""
        return await save_screenshot(
            call, full_page=call.data.full_page, return_base64=call.data.return_base64
        )
