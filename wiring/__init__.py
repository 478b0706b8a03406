"""What the product is made of, in one table: tools, CLI command groups, pipeline flows, deployments, demo steps.

Plain data: dotted paths and names only. Nothing here imports what it names, so reading the table
costs nothing, and every layer may read it (`tasks/registry.py` the tools, `flows/cli.py` the
command groups, `tasks/pipeline_model.py` and `flows/pipeline.py` the pipeline flows,
`flows/deployments.py` and `prefect.yaml` the deployments, `flows/demo.py` the demo steps) without
pulling in the layers above it. A new tool, command group, pipeline flow, deployment or demo step
is one line here; `udm prefect-yaml` rewrites prefect.yaml from DEPLOYMENTS, and
tests/foundation/test_wiring.py checks that every path resolves and prefect.yaml agrees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "COMMAND_GROUPS",
    "DEMO_STEPS",
    "DEPLOYMENTS",
    "DEPLOYMENT_ENV",
    "PIPELINE_FLOWS",
    "SERVED_SUFFIX",
    "TOOLS",
    "WORK_POOL",
    "WORK_QUEUE",
    "DeploymentDef",
]

# "module:ClassName", one per tool, in the order `udm tools list` shows them.
TOOLS: tuple[str, ...] = (
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
)

# Modules of the `udm` command, each with a `register(app)`; `udm --help` lists commands in this order.
COMMAND_GROUPS: tuple[str, ...] = (
    "flows.cli_tools",
    "flows.cli_index",
    "flows.demo",
    "flows.cli_graph",
    "flows.cli_platform",
    "flows.cli_browser",
    "flows.cli_patch",
    "flows.cli_research",
    "flows.cli_daemon",
    "flows.prefect_yaml",
)

# `udm demo`: (title, "module:function"), run in this order; a step takes the DemoWorkspace.
DEMO_STEPS: tuple[tuple[str, str], ...] = (
    ("file-system tool", "flows.demo:step_filesystem"),
    ("index the UDM", "flows.cli_index:step_index"),
    ("query the UDM (never stale)", "flows.cli_index:step_queries"),
    ("lint the UDM", "flows.cli_index:step_lint"),
    ("knowledge graph: impact query", "flows.cli_graph:step_graph_impact"),
    ("browser verification: inline checks", "flows.cli_browser:step_verify_inline"),
    ("patches: check and apply", "flows.cli_patch:step_patch_check_apply"),
    ("research: offline, cited appendix", "flows.cli_research:step_research"),
    ("pipelines: check, graph and run a spec", "flows.cli_platform:step_pipelines"),
    ("MCP server and LLM tool use", "flows.cli_platform:step_mcp_llm"),
)

# The flows a pipeline spec's step may run (`flow: research`), by the name specs use.
PIPELINE_FLOWS: dict[str, str] = {
    "research": "flows.research:research_flow",
    "update": "flows.udm_update:udm_update_flow",
    "verify": "flows.browser_verify:browser_verification_flow",
    "index": "flows.index:index_flow",
}

# Appended to a deployment's name when `udm serve` registers it (see flows/deployments.py).
SERVED_SUFFIX = "-served"

# The work pool of prefect.yaml's deployments (`prefect worker start --pool udm-pool`).
WORK_POOL = "udm-pool"
WORK_QUEUE = "default"

# The settings the flows read, as job variables of every pool deployment: a process worker puts
# `env` into the flow run's environment. Values are strings (they become environment variables).
DEPLOYMENT_ENV: dict[str, str] = {
    "UDM_ROOT": "docs/udm",
    "UDM_STATE_DIR": "state",
    "UDM_APPROVAL_POLICY": "smart_auto",
    "UDM_FETCH_ALLOW": "",
    "UDM_GIT_COMMIT": "true",
}


@dataclass(frozen=True)
class DeploymentDef:
    """One deployment: which flow, its name, schedule, default parameters and settings it changes."""

    name: str
    entrypoint: str  # "flows/module.py:function", as prefect.yaml writes it
    description: str
    cron: str | None = None  # in UTC
    interval_seconds: int | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ("udm",)
    # Settings of DEPLOYMENT_ENV this deployment's pool runs change, and why (a prefect.yaml comment).
    env: dict[str, str] = field(default_factory=dict)
    env_reason: str = ""

    @property
    def served_name(self) -> str:
        """The name `udm serve` registers it under."""
        return self.name + SERVED_SUFFIX

    @property
    def import_path(self) -> tuple[str, str]:
        """(module, attribute) of the flow."""
        path, _, attr = self.entrypoint.partition(":")
        return path.removesuffix(".py").replace("/", "."), attr


DEPLOYMENTS: tuple[DeploymentDef, ...] = (
    DeploymentDef(
        name="reindex",
        entrypoint="flows/index.py:index_flow",
        description="Frequent re-index: keep the DuckDB index in step with the manual's files.",
        interval_seconds=900,
    ),
    DeploymentDef(
        name="nightly-verification",
        entrypoint="flows/browser_verify.py:browser_verification_flow",
        description="Nightly browser verification of the manual's checks, with screenshots.",
        cron="0 2 * * *",
    ),
    DeploymentDef(
        name="weekly-research-refresh",
        entrypoint="flows/research.py:research_flow",
        description="Weekly research refresh of the manual's main research topic; the appendix waits for approval.",
        cron="0 3 * * 1",
        parameters={
            "request": {
                "question": "What changed in DuckDB full-text search and its Python API?",
                "libraries": ["duckdb"],
            }
        },
    ),
    DeploymentDef(
        name="on-demand-research",
        entrypoint="flows/research.py:research_flow",
        description='Research one question into a cited appendix (--param request=\'{"question": "..."}\').',
    ),
    DeploymentDef(
        name="apply-update",
        entrypoint="flows/udm_update.py:udm_update_flow",
        description="Apply edit instructions as one transaction; pauses for approval after the diff.",
    ),
    DeploymentDef(
        name="run-pipeline",
        entrypoint="flows/pipeline.py:pipeline_flow",
        description="Run any pipeline spec (--param spec=path/to/spec.yaml).",
        parameters={"spec": "examples/pipelines/verify.yaml"},
        env={"UDM_FETCH_ALLOW": "127.0.0.1"},
        env_reason="The sample spec checks the sample site served on 127.0.0.1:8000; allow-list only what you check.",
    ),
)
