"""The registry of tools: one line per tool, imported lazily so listing a tool costs only its module."""

from __future__ import annotations

import importlib
from typing import Any

from tasks.base import Tool

__all__ = ["TOOL_PATHS", "all_tools", "get_tool", "tool_names"]

# "module:ClassName", one per tool. Each issue's tools add their lines here, grouped by module.
TOOL_PATHS: list[str] = [
    "tasks.filesystem:FileSystemAccessTool",
    # UDM index and query (tasks/udm_query.py, tasks/udm_sql.py)
    "tasks.udm_query:UdmQueryTool",
    "tasks.udm_sql:UdmSqlQueryTool",
    # Browser: the agent's eight actions (tasks/browser/agent_actions.py)
    "tasks.browser.agent_actions:LaunchBrowserTool",
    "tasks.browser.agent_actions:ClickElementTool",
    "tasks.browser.agent_actions:TypeTextTool",
    "tasks.browser.agent_actions:ScrollPageTool",
    "tasks.browser.agent_actions:CaptureScreenshotTool",
    "tasks.browser.agent_actions:GetElementTextTool",
    "tasks.browser.agent_actions:CheckElementExistsTool",
    "tasks.browser.agent_actions:CloseBrowserTool",
    # Browser automation: navigation, interaction, synchronisation (tasks/browser/automation.py)
    "tasks.browser.automation:NavigateToUrlTool",
    "tasks.browser.automation:ScrollTool",
    "tasks.browser.automation:RefreshTool",
    "tasks.browser.automation:GoBackTool",
    "tasks.browser.automation:GoForwardTool",
    "tasks.browser.automation:ClickTool",
    "tasks.browser.automation:TypeTextSimpleTool",
    "tasks.browser.automation:HoverTool",
    "tasks.browser.automation:FocusTool",
    "tasks.browser.automation:SelectOptionTool",
    "tasks.browser.automation:WaitForElementTool",
    "tasks.browser.automation:WaitForConditionTool",
    # Browser extraction and memory (tasks/browser/extraction.py, tasks/browser/memory.py)
    "tasks.browser.extraction:ExtractTextTool",
    "tasks.browser.extraction:ExtractLinksTool",
    "tasks.browser.extraction:ExtractDataTool",
    "tasks.browser.extraction:ExtractTableTool",
    "tasks.browser.extraction:ExtractFormTool",
    "tasks.browser.extraction:GetElementInfoTool",
    "tasks.browser.extraction:ScreenshotTool",
    "tasks.browser.memory:SessionMemoryTool",
    "tasks.browser.memory:HistoryTrackerTool",
    "tasks.browser.memory:PersistentCacheTool",
    # Browser page tools (tasks/browser/page_tools.py)
    "tasks.browser.page_tools:GetPageTextTool",
    "tasks.browser.page_tools:SearchOnPageTool",
    "tasks.browser.page_tools:GetPageStructureTool",
    "tasks.browser.page_tools:GetImageTool",
    "tasks.browser.page_tools:GetLinksTool",
    "tasks.browser.page_tools:GetTabsTool",
    "tasks.browser.page_tools:OpenInNewTabTool",
    "tasks.browser.page_tools:GetFullPageScreenshotTool",
    # Browser tab-level tools (tasks/browser/browser_tools.py)
    "tasks.browser.browser_tools:BrowserReadPageTool",
    "tasks.browser.browser_tools:BrowserTabsTool",
    "tasks.browser.browser_tools:BrowserCookiesTool",
    "tasks.browser.browser_tools:BrowserDownloadTool",
    # Patches: editors and the updater (tasks/markdown_editor.py, tasks/yaml_editor.py, tasks/udm_updater.py)
    "tasks.markdown_editor:MarkdownParserEditorTool",
    "tasks.yaml_editor:YamlJsonParserEditorTool",
    "tasks.udm_updater:UdmUpdaterTool",
    # Knowledge graph (tasks/knowledge_graph.py)
    "tasks.knowledge_graph:KnowledgeGraphQueryTool",
    # Research (tasks/web_search.py, tasks/documents.py, tasks/context7.py)
    "tasks.web_search:WebSearchTool",
    "tasks.documents:DocumentFetchingParsingTool",
    "tasks.context7:Context7DocumentationTool",
    # Platform: pipeline checks and schedules (tasks/pipeline_check.py, tasks/schedules.py)
    "tasks.pipeline_check:PipelineCheckTool",
    "tasks.schedules:ScheduleCreateTool",
    "tasks.schedules:ScheduleListTool",
    "tasks.schedules:SchedulePauseTool",
    "tasks.schedules:ScheduleResumeTool",
]

_CACHE: dict[str, Tool[Any, Any]] = {}


def _load(path: str) -> Tool[Any, Any]:
    if path not in _CACHE:
        module_name, _, class_name = path.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        _CACHE[path] = cls()
    return _CACHE[path]


def all_tools() -> list[Tool[Any, Any]]:
    """Every registered tool, in registry order."""
    return [_load(p) for p in TOOL_PATHS]


def tool_names() -> list[str]:
    """The names of every registered tool."""
    return [t.name for t in all_tools()]


def get_tool(name: str) -> Tool[Any, Any] | None:
    """The tool with this name (case-insensitive on the first letter, as specs spell both), or None."""
    for tool in all_tools():
        if tool.name == name or tool.name.lower() == name.lower():
            return tool
    return None
