"""The docs site: the generated references name every command, option and setting; the commands the
README and the docs pages show exist with the options they give; the site builds with --strict."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_hook():
    spec = importlib.util.spec_from_file_location("folioflow_docs_reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = _load_hook()


def test_cli_reference_names_every_command_and_option():
    text = hook.cli_markdown()
    commands = list(hook.cli_commands())
    paths = [path for path, _, _ in commands]
    # the CLI's known shape, so a walk that found nothing cannot pass
    for expected in ("folioflow ingest", "folioflow query", "folioflow eval retrieval", "folioflow ocr serve"):
        assert expected in paths
    for path, command, _ in commands:
        assert f"`{path}`" in text, path
        for flag in hook.cli_options(command):
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), f"{path}: {flag}"
    assert "--all-chunks" in text and "--no-route-titles" in text  # secondary (off) flags are listed


def test_settings_reference_names_every_field_and_env_var():
    from folioflow.flows.settings import Settings
    from folioflow.flows.source_config import SourceConfig

    text = hook.settings_markdown()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(Settings.model_fields)
    for name, field in Settings.model_fields.items():
        assert f"| `{name}`" in text, name
        for env in hook.settings_env_names(name, field):
            assert f"`{env}`" in text, env
        if field.description:
            assert hook._escape(field.description, table=True) in text, name
    assert "`QDRANT_URL`" in text and "`FOLIOFLOW_QDRANT_URL`" in text
    sources = hook.sources_markdown()
    for name in SourceConfig.model_fields:
        assert f"| `{name}`" in sources, name


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def _shown_commands(text: str) -> list[str]:
    """``folioflow ...`` invocations in bash blocks (one per line or ``&&`` part) and in code spans."""
    found: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            for part in line.split("&&"):
                part = part.split("  #")[0].strip()
                part = re.sub(r"^(\.venv/bin/|[A-Z_]+=\S+ )+", "", part)
                if part.startswith("folioflow "):
                    found.append(part)
    for span in re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
        span = re.sub(r"^\.venv/bin/", "", span)
        if span.startswith("folioflow ") and "..." not in span:
            found.append(span)
    return found


def _check_invocation(invocation: str, commands: dict) -> list[str]:
    try:
        words = shlex.split(invocation.replace("[", " ").replace("]", " "))
    except ValueError:
        words = invocation.replace("[", " ").replace("]", " ").split()
    path = "folioflow"
    rest = words[1:]
    while rest and f"{path} {rest[0]}" in commands:
        path = f"{path} {rest[0]}"
        rest = rest[1:]
    options = set(hook.cli_options(commands[path]))
    problems = []
    if path == "folioflow" and rest and not rest[0].startswith("-") and not rest[0].isupper():  # COMMAND: a placeholder
        problems.append(f"{invocation!r}: no command {rest[0]!r}")
    for word in rest:
        if word == "--":  # what follows goes to another program (vllm serve)
            break
        flag = word.split("=")[0]
        if flag.startswith("-") and len(flag) > 1 and not re.fullmatch(r"-\d.*", flag) and flag not in options:
            problems.append(f"{invocation!r}: {path} has no option {flag}")
    return problems


def test_commands_shown_in_readme_and_docs_exist():
    commands = {path: command for path, command, _ in hook.cli_commands()}
    problems: list[str] = []
    checked = 0
    for file in _doc_files():
        for invocation in _shown_commands(file.read_text()):
            checked += 1
            problems += [f"{file.relative_to(ROOT)}: {p}" for p in _check_invocation(invocation, commands)]
    assert checked > 30
    assert not problems, "\n".join(problems)


def test_checker_catches_a_wrong_option():
    commands = {path: command for path, command, _ in hook.cli_commands()}
    assert _check_invocation("folioflow query 'x' -k 3 --all-chunks", commands) == []
    assert _check_invocation("folioflow query 'x' --top 3", commands)
    assert _check_invocation("folioflow nosuch", commands)


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs, mkdocs-material) is not installed")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    page = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert 'id="folioflow-ingest"' in page and "--report" in page


def test_service_page_lists_the_keys_of_a_search_hit():
    """docs/service.md's ``POST /v1/query`` row names every key of a hit, and no other (it had listed
    a ``source_name`` that hits do not have, and left out ``uri`` and ``page_repeat``)."""
    from folioflow.flows.queries import QueryHit

    row = next(line for line in (ROOT / "docs" / "service.md").read_text().splitlines() if line.startswith("| `POST /v1/query`"))
    listed = row.split("Answers the list of hits", 1)[1].split("(", 1)[1].split(";", 1)[0]
    assert set(re.findall(r"`(\w+)`", listed)) == set(QueryHit.model_fields)
