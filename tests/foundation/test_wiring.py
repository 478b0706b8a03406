"""The one wiring table: every line resolves, every reader reads it, prefect.yaml is written from it."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import yaml

import wiring
from flows.cli import run

REPO = Path(__file__).resolve().parents[2]


def split(path: str) -> tuple[str, str]:
    """("module", "attribute") of a "module:attribute" line."""
    module, sep, attr = path.partition(":")
    assert sep and module and attr, f"{path!r} is not module:attribute"
    return module, attr


def names_a_class(file: Path) -> bool:
    """Whether a class in this file sets `name` in its body (read, not imported: importing every
    module of tasks/ would cost seconds of Prefect and MCP imports)."""
    tree = ast.parse(file.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                targets = [stmt.target] if isinstance(stmt, ast.AnnAssign) else getattr(stmt, "targets", [])
                if any(isinstance(t, ast.Name) and t.id == "name" for t in targets):
                    return True
    return False


def test_every_tool_is_wired_once_and_every_wired_tool_is_a_tool() -> None:
    from tasks.base import Tool

    assert len(set(wiring.TOOLS)) == len(wiring.TOOLS)
    defined = set()
    for file in sorted((REPO / "tasks").rglob("*.py")):
        if not names_a_class(file):
            continue
        module_name = ".".join(file.relative_to(REPO).with_suffix("").parts)
        module = importlib.import_module(module_name)
        for name, obj in vars(module).items():
            # A concrete tool names itself; bases such as BrowserTool do not.
            concrete = inspect.isclass(obj) and "name" in vars(obj) and not inspect.isabstract(obj)
            if concrete and issubclass(obj, Tool) and obj.__module__ == module_name:
                defined.add(f"{module_name}:{name}")
    assert set(wiring.TOOLS) == defined, (set(wiring.TOOLS) - defined, defined - set(wiring.TOOLS))


def test_the_readers_read_the_table() -> None:
    import flows.demo
    import flows.deployments
    import tasks.registry

    assert list(wiring.TOOLS) == tasks.registry.TOOL_PATHS
    assert list(wiring.DEMO_STEPS) == flows.demo.DEMO_STEPS
    assert flows.deployments.DEPLOYMENTS is wiring.DEPLOYMENTS
    assert [t.name for t in tasks.registry.all_tools()] == tasks.registry.tool_names()


def test_command_groups_and_demo_steps_resolve() -> None:
    import typer

    for group in wiring.COMMAND_GROUPS:
        assert group.startswith("flows."), group
        assert callable(importlib.import_module(group).register), group
    # Every group added at least one command to the app (the app is built from this table).
    from flows.cli import app

    command = typer.main.get_command(app)
    assert {
        "tools",
        "index",
        "demo",
        "graph",
        "serve",
        "verify",
        "patch",
        "research",
        "daemon",
        "prefect-yaml",
    } <= set(
        command.commands  # type: ignore[attr-defined]
    )
    titles = [title for title, _ in wiring.DEMO_STEPS]
    assert len(set(titles)) == len(titles)
    for _, path in wiring.DEMO_STEPS:
        module, attr = split(path)
        assert module.startswith("flows."), path
        assert callable(getattr(importlib.import_module(module), attr)), path


def test_pipeline_flows_are_flows_of_the_flows_package() -> None:
    from tasks.pipeline_spec import BUILTIN_FLOWS

    assert tuple(wiring.PIPELINE_FLOWS) == BUILTIN_FLOWS == ("research", "update", "verify", "index")
    for name, path in wiring.PIPELINE_FLOWS.items():
        module, attr = split(path)
        file = REPO / (module.replace(".", "/") + ".py")
        assert module.startswith("flows.") and f"def {attr}(" in file.read_text(encoding="utf-8"), name
    # Every flow a pipeline may run has a deployment too ("flows/index.py:index_flow" -> "flows.index:index_flow").
    deployed = {d.entrypoint.replace("/", ".").replace(".py:", ":") for d in wiring.DEPLOYMENTS}
    assert set(wiring.PIPELINE_FLOWS.values()) <= deployed


def test_deployment_entrypoints_are_flow_files() -> None:
    names = [d.name for d in wiring.DEPLOYMENTS]
    assert len(set(names)) == len(names)
    for d in wiring.DEPLOYMENTS:
        file, attr = split(d.entrypoint)
        assert file.startswith("flows/") and (REPO / file).is_file(), d.entrypoint
        assert f"def {attr}(" in (REPO / file).read_text(encoding="utf-8"), d.entrypoint
        assert not (d.cron and d.interval_seconds), d.name
        assert set(d.env) <= set(wiring.DEPLOYMENT_ENV), d.name  # overrides of known settings only
        assert all(isinstance(v, str) for v in (*d.env.values(), *wiring.DEPLOYMENT_ENV.values()))


def test_prefect_yaml_is_written_from_the_table() -> None:
    from flows.prefect_yaml import render_prefect_yaml

    text = render_prefect_yaml()
    assert (REPO / "prefect.yaml").read_text(encoding="utf-8") == text, "run `udm prefect-yaml`"
    doc = yaml.safe_load(text)
    assert [d["name"] for d in doc["deployments"]] == [d.name for d in wiring.DEPLOYMENTS]
    for d, y in zip(wiring.DEPLOYMENTS, doc["deployments"], strict=True):
        assert y["entrypoint"] == d.entrypoint and y["description"] == d.description
        assert y["parameters"] == d.parameters and y["tags"] == list(d.tags)
        assert y["work_pool"] == {"name": wiring.WORK_POOL, "work_queue_name": wiring.WORK_QUEUE}
        assert y["job_variables"] == {"env": {**wiring.DEPLOYMENT_ENV, **d.env}}


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "true",
        "",
        "0 2 * * *",
        "a: b",
        "x # y",
        " lead",
        "it's",
        '{"q": 1}',
        "[a]",
        "null",
        "1.5",
        "é",
        "- x",
        "a\nb",
        "a, b",
        "*x",
        "&y",
    ],
)
def test_scalars_read_back_as_written(value: str) -> None:
    from flows.prefect_yaml import _block

    lines = _block({"k": value, "n": {"inner": [value, "b"]}, "e": {}}, 0)
    assert yaml.safe_load("\n".join(lines)) == {"k": value, "n": {"inner": [value, "b"]}, "e": {}}


def test_the_command_writes_and_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "prefect.yaml"
    assert run(["prefect-yaml", "--file", str(target), "--check"]) == 1
    assert not target.exists()  # --check never writes
    assert "differs from wiring.DEPLOYMENTS" in capsys.readouterr().err
    assert run(["prefect-yaml", "--file", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == (REPO / "prefect.yaml").read_text(encoding="utf-8")
    assert run(["prefect-yaml", "--file", str(target), "--check"]) == 0
    assert "up to date (6 deployments)" in capsys.readouterr().out
    # A change to the table shows up as a difference until the file is written again.
    changed = (
        *wiring.DEPLOYMENTS[:-1],
        wiring.DeploymentDef(name="other", entrypoint="flows/index.py:index_flow", description="x"),
    )
    monkeypatch.setattr("flows.prefect_yaml.DEPLOYMENTS", changed)
    assert run(["prefect-yaml", "--file", str(target), "--check"]) == 1
    assert run(["prefect-yaml", "--file", str(target)]) == 0
    assert [d["name"] for d in yaml.safe_load(target.read_text())["deployments"]][-1] == "other"
    assert [p.name for p in tmp_path.iterdir()] == ["prefect.yaml"]  # no temporary file left


def test_a_deployment_setting_and_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.prefect_yaml import render_prefect_yaml

    odd = wiring.DeploymentDef(
        name="odd",
        entrypoint="flows/index.py:index_flow",
        description="x",
        interval_seconds=60,
        env={"UDM_ROOT": "docs: manual", "UDM_GIT_COMMIT": "false"},
        env_reason="two\nlines # and a hash",
    )
    monkeypatch.setattr("flows.prefect_yaml.DEPLOYMENTS", (odd,))
    [doc] = yaml.safe_load(render_prefect_yaml())["deployments"]
    assert doc["job_variables"]["env"] == {**wiring.DEPLOYMENT_ENV, **odd.env}
    assert doc["schedules"] == [{"interval": 60}]


def test_the_command_reports_an_unwritable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-folder" / "prefect.yaml"
    assert run(["prefect-yaml", "--file", str(missing)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write") and "Traceback" not in err
