"""Settings: where the UDM, state and logs live, what may be touched, and how tools behave.

Resolved from, highest first: explicit overrides, `UDM_*` environment variables, `udm.toml` in the
working directory, `[tool.udm]` in its `pyproject.toml`, then the defaults below. Relative paths are
resolved against the working directory the settings were loaded in (`project_root`).
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from udm.config_sources import ENV_PREFIX, SOURCE_DEFAULTS, read_config_files, resolve_path
from udm.config_types import (
    DEFAULT_ID_PATTERNS,
    ApprovalPolicy,
    CommaPaths,
    CommaStrings,
    ConfigFile,
    FailOn,
    LintIgnore,
    LintRules,
    SiteGenerator,
    Suffixes,
    TaskRunner,
    config_error,
)
from udm.datalimits import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, DEPTH_CEILING, apply_settings
from udm.errors import ConfigError
from udm.shown import shown_line, utf8_name

__all__ = ["DEFAULT_ID_PATTERNS", "ApprovalPolicy", "Settings", "ensure_folder", "load_settings"]


class Settings(BaseSettings):
    """Every setting of UDM Pipelines; see the module docstring for where values come from."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="ignore",
        validate_default=True,
    )

    project_root: Path = Field(
        default_factory=Path.cwd,
        description="Directory that relative paths are resolved against (the working directory).",
    )
    root: Path = Field(
        default=Path(SOURCE_DEFAULTS["root"]),
        description="The manual's folder (UDM_ROOT).",
    )
    state_dir: Path = Field(
        default=Path(SOURCE_DEFAULTS["state_dir"]),
        description="The engine's own state: index, journal, patches, caches, locks. No tool may read or "
        "write it.",
    )
    scratch_dir: Path = Field(
        default=Path("scratch"),
        description="The tools' own folder for scratch files and browser downloads (never inside the "
        "state folder).",
    )
    logs_dir: Path = Field(
        default=Path(SOURCE_DEFAULTS["logs_dir"]), description="JSON-lines logs, one file per stream."
    )
    prompts_dir: Path = Field(
        default=Path("prompts"), description="Prompt files the modes read; allowed for file tools."
    )
    allowed_dirs: CommaPaths = Field(
        default_factory=list,
        description="Extra directories the file tools may touch (comma-separated in the environment).",
    )
    approval_policy: ApprovalPolicy = Field(
        default=ApprovalPolicy(SOURCE_DEFAULTS["approval_policy"]),
        description="ask_always | smart_auto | full_auto.",
    )
    allow_delete: bool = Field(
        default=False, description="Enable fileSystemAccessTool's destructive deleteFile action."
    )
    daemon_autostart: bool = Field(
        default=False,
        description="Start `udm daemon` in the background on the first query, search or graph command "
        "that finds none running (UDM_DAEMON_AUTOSTART).",
    )
    id_patterns: CommaStrings = Field(
        default_factory=lambda: list(DEFAULT_ID_PATTERNS), description="Regexes of the manual's ID families."
    )

    # Browser
    browser: str | None = Field(
        default=None,
        description="Browser executable (UDM_BROWSER); else /usr/bin/chromium, else Playwright's own.",
    )
    browser_timeout_s: float = Field(
        default=10.0, gt=0, description="Default timeout of one browser action, seconds."
    )
    browser_max_timeout_s: float = Field(
        default=120.0, gt=0, description="Largest timeout a caller may ask for, seconds."
    )
    browser_concurrency: int = Field(
        default=4, ge=1, le=32, description="Parallel browser contexts in verification runs."
    )

    # Fetching and research
    fetch_allow: CommaStrings = Field(
        default_factory=list,
        description="Hostnames, IPs or CIDR ranges exempt from the SSRF guard (UDM_FETCH_ALLOW, comma-separated).",
    )
    fetch_respect_robots: bool = Field(default=True, description="Honour robots.txt when fetching.")
    fetch_timeout_s: float = Field(
        default=10.0, gt=0, description="Connect/read timeout of one fetch, seconds."
    )
    fetch_user_agent: str = Field(
        default="udm-pipelines/0.1 (+documentation maintenance)", description="User-Agent of fetches."
    )
    fetch_max_redirects: int = Field(
        default=5, ge=0, le=20, description="Most redirects one fetch follows (each hop re-checked)."
    )
    fetch_total_timeout_s: float = Field(
        default=60.0, gt=0, description="Wall-clock limit of one whole fetch (all hops and the body)."
    )
    fetch_host_concurrency: int = Field(
        default=4, ge=1, le=64, description="Most fetches in flight to one host at a time."
    )
    fetch_host_delay_s: float = Field(
        default=0.1, ge=0, description="Politeness gap between request starts to one host, seconds."
    )
    fetch_cache: bool = Field(
        default=True, description="Keep fetched bodies in <state>/fetch-cache for conditional requests."
    )
    fetch_retries: int = Field(
        default=3, ge=0, le=10, description="Retries of a transient fetch/search/Context7 failure in flows."
    )
    retry_max_wait_s: float = Field(
        default=30.0, gt=0, description="Cap on one retry wait (Retry-After included), seconds."
    )
    research_max_workers: int = Field(
        default=16, ge=1, le=128, description="Threads of the research flow's task runner."
    )
    research_parse_processes: int = Field(
        default=-1,
        ge=-1,
        le=64,
        description="Processes parsing fetched documents in a research fan-out (-1: one per core when "
        "there are two or more; 0: parse in the flow's own process).",
    )
    # Task runners (flows.runners): where a run's fan-out executes
    task_runner: TaskRunner = Field(
        default="threads",
        description="Task runner of the research fan-out, the verification checks and the pipeline's "
        "parallel steps: threads (a bounded thread pool in the flow's process) or dask (prefect-dask).",
    )
    dask_address: str | None = Field(
        default=None,
        description="Scheduler of an existing Dask cluster (tcp://host:8786); unset: a local cluster "
        "of dask_workers processes, started for the run.",
    )
    dask_workers: int = Field(default=2, ge=1, le=64, description="Worker processes of a local Dask cluster.")
    dask_threads_per_worker: int = Field(
        default=4, ge=1, le=64, description="Threads of each worker process of a local Dask cluster."
    )
    dask_connect_timeout_s: float = Field(
        default=10.0, gt=0, le=300, description="How long to wait for the Dask scheduler at dask_address."
    )
    research_batch_size: int = Field(
        default=25,
        ge=1,
        le=500,
        description="Sources one task run of the research fan-out fetches (a task run costs the Prefect "
        "server 25-45 ms of CPU, more than a page).",
    )
    research_batch_threads: int = Field(
        default=8, ge=1, le=64, description="Threads fetching the sources of one research batch at a time."
    )
    research_synthesizer: Literal["extractive", "llm"] = Field(
        default="extractive",
        description="Who writes a research appendix's answer: extractive (offline, verbatim quotes) or llm.",
    )
    llm_protocol: Literal["openai", "anthropic"] = Field(
        default="openai",
        description="openai: any OpenAI-compatible chat-completions endpoint (Ollama, vLLM, llama.cpp); "
        "anthropic: the Anthropic Messages API.",
    )
    llm_url: str = Field(
        default="http://127.0.0.1:11434/v1",
        description="Base URL of the LLM API (OpenAI-compatible: up to /v1; Anthropic: https://api.anthropic.com).",
    )
    llm_model: str = Field(default="llama3.1", description="Model name sent to the LLM API.")
    llm_max_output_tokens: int = Field(
        default=1500, ge=64, le=32_000, description="Most tokens the LLM may write for one appendix."
    )
    llm_token_budget: int = Field(
        default=12_000,
        ge=1000,
        le=1_000_000,
        description="Tokens of one LLM call in all (prompt estimated at 4 characters a token, plus the output).",
    )
    llm_timeout_s: float = Field(default=120.0, gt=0, description="Timeout of one LLM call, seconds.")
    llm_retries: int = Field(
        default=3, ge=0, le=10, description="Retries of an LLM call answered 429, 5xx or 529."
    )
    openai_api_key: SecretStr | None = Field(
        default=None, description="API key of the OpenAI-compatible endpoint (none for a local server)."
    )
    anthropic_api_key: SecretStr | None = Field(default=None, description="Anthropic API key.")
    search_provider: str = Field(default="udm", description="udm | searxng | brave | google.")
    searxng_url: str | None = Field(default=None, description="Base URL of a SearXNG instance.")
    brave_api_key: SecretStr | None = Field(default=None, description="Brave Search API key.")
    brave_api_url: str = Field(
        default="https://api.search.brave.com", description="Brave Search API base URL."
    )
    google_api_key: SecretStr | None = Field(default=None, description="Google Programmable Search API key.")
    google_cx: str | None = Field(default=None, description="Google Programmable Search engine ID (cx).")
    google_api_url: str = Field(
        default="https://www.googleapis.com", description="Google Custom Search API base URL."
    )
    context7_url: str = Field(default="https://context7.com", description="Context7 API base URL.")
    context7_api_key: SecretStr | None = Field(default=None, description="Context7 API key (Bearer).")
    secrets_from_prefect: bool = Field(
        default=False,
        description="Read missing API keys from Prefect Secret blocks udm-brave-api-key, udm-google-api-key, "
        "udm-context7-api-key.",
    )

    # Review notifications: who is told that a patch waits for approval
    review_webhook_url: str | None = Field(
        default=None,
        description="POST a JSON note here when a review starts waiting (UDM_REVIEW_WEBHOOK_URL).",
    )
    review_notify_block: str | None = Field(
        default=None,
        description="Name of a saved Prefect notification block (e.g. a Slack or custom webhook block) "
        "notified when a review starts waiting (UDM_REVIEW_NOTIFY_BLOCK).",
    )

    # Git: a committed patch becomes one commit when the manual lives in a git work tree
    git_commit: bool = Field(
        default=True,
        description="Commit each committed patch, revert and fmt to git when the manual is in a work tree.",
    )
    git_branch_per_patch: bool = Field(
        default=False,
        description="Commit each patch on a new branch udm/patch-<id> (left checked out) for a pull request.",
    )

    # Engine
    markdown_suffixes: Suffixes = Field(
        default_factory=lambda: [".md", ".markdown", ".mdx"],
        description="File suffixes of the manual's pages (`.mdx` parses as MDX); comma-separated in the environment.",
    )
    max_file_bytes: int = Field(
        default=4_000_000,
        ge=1,
        description="Largest page the index parses, bytes; a larger one is listed as 'skipped: too large'.",
    )
    data_sections: CommaStrings = Field(
        default_factory=list,
        description="Heading titles or paths (glob patterns, any case) whose YAML/JSON fences are data, "
        "not examples; comma-separated in the environment.",
    )
    index_busy_timeout_s: float = Field(
        default=10.0, gt=0, description="How long a query waits for a busy index, seconds."
    )
    lock_timeout_s: float = Field(
        default=10.0, gt=0, description="How long a writer waits for the UDM root's lock, seconds."
    )
    kg_timeout_s: float = Field(
        default=2.0, gt=0, description="Time limit of one knowledge-graph query, seconds."
    )
    kg_row_cap: int = Field(default=1000, ge=1, description="Most rows a knowledge-graph query returns.")
    sql_row_cap: int = Field(default=1000, ge=1, description="Most rows a read-only SQL query returns.")
    sql_timeout_s: float = Field(
        default=5.0, gt=0, description="Time limit of one read-only SQL query, seconds."
    )
    sql_memory_limit_mb: int = Field(
        default=1024,
        ge=64,
        description="DuckDB memory limit of one read-only SQL query, MB; its worker process's address "
        "space is capped at twice this plus 1 GiB.",
    )
    sql_threads: int = Field(default=2, ge=1, le=64, description="DuckDB threads of one read-only SQL query.")
    sql_temp_limit_mb: int = Field(
        default=1024,
        ge=0,
        description="Temporary disk one read-only SQL query may spill to (<state>/sql-temp), MB.",
    )
    data_max_depth: int = Field(
        default=DEFAULT_MAX_DEPTH,
        ge=1,
        le=DEPTH_CEILING,
        description="Most nesting levels (lists and mappings) of one JSON/YAML text: data blocks, front "
        "matter, data files, patch files, editor inputs. Checked before parsing.",
    )
    data_max_bytes: int = Field(
        default=DEFAULT_MAX_BYTES, ge=1024, description="Largest JSON/YAML text parsed, in UTF-8 bytes."
    )

    # Site conventions and lint (see the README's "Links and site routes" and "Lint" sections)
    site_generator: SiteGenerator = Field(
        default="auto",
        description="How links resolve as site routes: auto (detect from docusaurus.config.*, docs.json, "
        "mint.json, mkdocs.yml, book.toml, hugo.toml, a Starlight astro.config.* or .vitepress/config.* "
        "at or above the root) | none | docusaurus | mintlify | mkdocs | mdbook | hugo | starlight | vitepress.",
    )
    site_config: ConfigFile = Field(
        default=None,
        description="The site generator's config file, when it is not found by its usual name (a "
        "`mkdocs build --config-file mkdocs-online.yml` site): a path relative to the project root, or "
        "absolute. Its generator is `site_generator`, else told by its name (mkdocs*.yml, "
        "docusaurus.config.*, docs.json, book.toml, hugo.*, ...).",
    )
    site_base_path: str | None = Field(
        default=None, description="The path the site is served under (e.g. /docs); default from its config."
    )
    link_exclude: CommaStrings = Field(
        default_factory=list,
        description="Link targets not checked, as glob patterns over the target as written (`g`, "
        "`https://internal.example/*`): lint reports nothing for them, `udm links` marks them skipped and "
        "never fetches them, a patch is never refused for them (lychee's exclude; a site's render hook "
        "that makes links of its own). Comma-separated in the environment.",
    )
    lint_rules: LintRules = Field(
        default_factory=dict,
        description="Severity per lint rule: error | warning | off (UDM_LINT_RULES as a JSON object).",
    )
    lint_ignore: LintIgnore = Field(
        default_factory=dict,
        description="Path globs (relative to the root) -> lint rules not reported there ('*' for all); "
        "a list of globs ignores every rule there.",
    )
    lint_fail_on: FailOn = Field(
        default="error", description="What makes `udm lint` exit 1: error | warning | never."
    )
    lint_max_warnings: int = Field(
        default=-1, ge=-1, description="`udm lint` exits 1 past this many warnings (-1: no cap)."
    )

    @model_validator(mode="after")
    def _scratch_outside_state(self) -> Settings:
        state, scratch = self.state_path, self.scratch_path
        for a, b in ((state, scratch), (Path(os.path.realpath(state)), Path(os.path.realpath(scratch)))):
            if b == a or b.is_relative_to(a):
                raise ValueError(
                    f"scratch_dir {scratch} lies inside the state folder {state}, which no tool may write; "
                    "choose a folder outside it"
                )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Overrides, then the environment, then udm.toml, then pyproject.toml's [tool.udm]."""
        # Read by the one reader the CLI's fast paths use too (relative to the working directory,
        # which load_settings sets to the project root).
        udm_toml, pyproject = read_config_files(os.getcwd())
        return (
            init_settings,
            env_settings,
            InitSettingsSource(settings_cls, udm_toml),
            InitSettingsSource(settings_cls, pyproject),
        )

    def resolve(self, path: Path | str) -> Path:
        """A configured path made absolute against the project root (not following symlinks)."""
        return Path(resolve_path(path, self.project_root))

    @property
    def udm_root(self) -> Path:
        """The manual's folder, absolute."""
        return self.resolve(self.root)

    @property
    def state_path(self) -> Path:
        """The state folder, absolute."""
        return self.resolve(self.state_dir)

    @property
    def logs_path(self) -> Path:
        """The logs folder, absolute."""
        return self.resolve(self.logs_dir)

    @property
    def scratch_path(self) -> Path:
        """The tools' scratch folder, absolute."""
        return self.resolve(self.scratch_dir)

    def allowed_roots(self) -> list[Path]:
        """Every directory the tools may touch: UDM root, scratch, logs, prompts, plus configured ones.

        The state folder is not one of them, and `protected_paths` keeps it out of bounds even when
        it lies inside one of these.
        """
        roots = [self.udm_root, self.scratch_path, self.logs_path, self.resolve(self.prompts_dir)]
        roots += [self.resolve(d) for d in self.allowed_dirs]
        unique: list[Path] = []
        for r in roots:
            if r not in unique:
                unique.append(r)
        return unique

    def protected_paths(self) -> list[Path]:
        """What no tool or patch may read or write: the engine's state, Prefect's home (its results), the
        settings files and the engine's own code."""
        paths = [self.state_path, self.resolve(os.environ.get("PREFECT_HOME") or "~/.prefect")]
        storage = os.environ.get("PREFECT_LOCAL_STORAGE_PATH")
        if storage:
            paths.append(self.resolve(storage))
        # The settings files are trusted configuration (the approval policy, the allowed directories):
        # with the manual at the project root a tool could otherwise loosen them for every later run.
        paths += [self.project_root / name for name in ("udm.toml", "pyproject.toml", "prefect.yaml")]
        return paths + _engine_code()

    def image_roots(self) -> list[Path]:
        """Where a tool result's screenshot path may point: the allowed roots, plus the state folder
        where the engine saves the screenshots it takes (read back as images only, never as files)."""
        return [*self.allowed_roots(), self.state_path]

    def public_dict(self) -> dict[str, Any]:
        """The resolved settings as JSON-able data, secrets masked."""
        data = self.model_dump(mode="json")
        for key, value in data.items():
            if isinstance(getattr(self, key), SecretStr) and value is not None:
                data[key] = "**********"
        for key in ("udm_root", "state_path", "logs_path", "scratch_path"):
            data[key] = str(getattr(self, key))
        data["protected_paths"] = [str(p) for p in self.protected_paths()]
        data["allowed_roots"] = [str(p) for p in self.allowed_roots()]
        return data


def _engine_code() -> list[Path]:
    """The code this process runs: the engine's packages and its virtual environment (a `.pth` file or a
    module written there runs at the next start), out of bounds even inside an allowed directory."""
    here = Path(__file__).resolve().parent
    code = [here, *(p for p in (here.parent / "tasks", here.parent / "flows") if p.is_dir())]
    if sys.prefix != sys.base_prefix:  # a virtual environment: all of it is code
        code.append(Path(sys.prefix))
    return code


def ensure_folder(path: Path) -> Path:
    """Create `path` (a state or cache folder) if needed; ConfigError naming it when that cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot use {path} as a state folder: {exc.strerror or exc} (set UDM_STATE_DIR or --state-dir)"
        ) from exc
    return path


def _utf8_folders(settings: Settings) -> None:
    """ConfigError when a folder the engine records or opens has a path that is not valid UTF-8: DuckDB
    stores and opens paths as UTF-8 only, so such a folder would end every command in its error."""
    folders = (
        ("root", settings.udm_root),
        ("state_dir", settings.state_path),
        ("logs_dir", settings.logs_path),
        ("scratch_dir", settings.scratch_path),
    )
    for key, path in folders:
        text = str(path)
        # The manual's files are also opened by their real paths (the journal's guard resolves them):
        # a root that is a link to a folder whose path is not UTF-8 is refused by that path.
        real = os.path.realpath(text) if key == "root" and utf8_name(text) else text
        if not utf8_name(real):
            where = shown_line(text) if real == text else f"{shown_line(text)} (really {shown_line(real)})"
            raise ConfigError(
                f"{key}: the path {where} is not valid UTF-8 (it holds bytes "
                "that no character encodes), and the index stores paths as UTF-8: rename the folder, "
                f"or set {key} to a folder whose path is valid UTF-8"
            )


def load_settings(cwd: Path | str | None = None, **overrides: Any) -> Settings:
    """Settings as seen from `cwd` (default: the current directory), with explicit overrides on top."""
    base = Path(cwd).resolve() if cwd is not None else Path.cwd()
    previous = Path.cwd()
    # The TOML sources read relative file names; reading them from `base` keeps the call pure.
    os.chdir(base)
    try:
        overrides.setdefault("project_root", base)
        settings = Settings(**overrides)
        _utf8_folders(settings)
        # Parsers without a settings object at hand (the document model) follow the last settings loaded.
        apply_settings(settings)
        return settings
    except (ValidationError, SettingsError, tomllib.TOMLDecodeError) as exc:
        raise config_error(exc, base) from exc
    finally:
        os.chdir(previous)
