"""Shared fixtures: an isolated environment per test, one Prefect test server per session."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Set before anything imports Prefect: an isolated home, no analytics, no DNS lookups, bounded startup.
_PREFECT_HOME = tempfile.mkdtemp(prefix="udm-test-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["DO_NOT_TRACK"] = "1"
os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "90"
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.pop("PREFECT_API_URL", None)

from tasks.base import ToolContext, always_approve  # noqa: E402
from udm.config import Settings, load_settings  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLE_UDM = REPO / "examples" / "udm"


@pytest.fixture(autouse=True)
def _clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No UDM_* setting or proxy from the developer's shell leaks into a test."""
    for key in list(os.environ):
        if key.startswith("UDM_") or key.lower() in {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}:
            monkeypatch.delenv(key, raising=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A project folder with a copy of the sample UDM at docs/udm and empty state/logs/prompts."""
    import shutil

    shutil.copytree(SAMPLE_UDM, tmp_path / "docs" / "udm")
    for sub in ("state", "logs", "prompts"):
        (tmp_path / sub).mkdir()
    return tmp_path


@pytest.fixture
def settings(workspace: Path) -> Settings:
    """Settings for the workspace fixture."""
    return load_settings(cwd=workspace)


@pytest.fixture
def ctx(settings: Settings) -> ToolContext:
    """A tool context over the workspace that approves every call."""
    return ToolContext(settings=settings, approver=always_approve)


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[None]:
    """One Prefect test server for the whole session (startup takes about 10 s here)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


Reviewer = Callable[..., tuple[threading.Thread, dict[str, Any]]]


@pytest.fixture
def reviewer(monkeypatch: pytest.MonkeyPatch) -> Reviewer:
    """Start a reviewer thread that resumes the next paused update with `answer`, as one in the UI would.

    Returns (thread, seen): `seen["run_id"]` is the outermost paused run (`seen["runs"]` all of them,
    innermost first); `on_paused()`, when given, runs each time the reviewer finds the run paused,
    before it answers.
    """
    from prefect.flow_runs import resume_flow_run

    import flows.approval as approval_mod

    original = approval_mod.pause_runs

    def start(
        answer: dict[str, Any], on_paused: Callable[[], None] | None = None
    ) -> tuple[threading.Thread, dict[str, Any]]:
        seen: dict[str, Any] = {}

        def recording_pause(*args: Any, **kwargs: Any) -> Any:
            # The runs paused for the review, innermost first; the reviewer answers on the outermost,
            # the one a person watching the parent pipeline or research run sees Paused.
            runs = original(*args, **kwargs)
            seen["runs"] = [r.flow_run_id for r in runs]
            seen["paused"] = runs
            seen["run_id"] = runs[-1].flow_run_id
            return runs

        monkeypatch.setattr(approval_mod, "pause_runs", recording_pause)

        def work() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if "run_id" in seen:
                    if on_paused is not None:
                        on_paused()
                    try:
                        resume_flow_run(seen["run_id"], run_input=answer)
                        return
                    except Exception:  # not paused yet: the pause is being recorded
                        pass
                time.sleep(0.3)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        return thread, seen

    return start


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
