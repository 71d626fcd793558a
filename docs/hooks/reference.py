"""mkdocs hook: the CLI and settings reference pages, generated at build time so they cannot drift.

``docs/reference/cli.md`` and ``docs/reference/settings.md`` hold hand-written introductions and a
marker comment each (:data:`CLI_MARKER`, :data:`SETTINGS_MARKER`, :data:`SOURCES_MARKER`); on every build
:func:`on_page_markdown` replaces the marker with Markdown generated from

- the typer app :data:`folioflow.flows.cli.app`, walked as a click command tree through
  ``typer.main.get_command``: every command and sub-command, its usage line, help text and each
  parameter's declaration, type, default and help (the same help record ``--help`` prints);
- the pydantic-settings model :class:`folioflow.flows.settings.Settings` and the source model
  :class:`folioflow.flows.source_config.SourceConfig`: every field's name, type, default,
  description and (for settings) the environment variables that set it.

Registered in ``mkdocs.yml`` under ``hooks:``; ``tests/test_docs.py`` imports this file to check
that the generated text names every command, option and field.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator
from typing import Any

CLI_MARKER = "<!-- generated: cli-reference -->"
SETTINGS_MARKER = "<!-- generated: settings-reference -->"
SOURCES_MARKER = "<!-- generated: sources-reference -->"


# --- Markdown helpers --------------------------------------------------------------------------------

def _escape(text: str, table: bool = False) -> str:
    """Escape ``<``, ``>`` (and ``|`` in table cells) outside backtick code spans, so help texts such as
    ``--opt <str>`` or ``dense | sparse`` render literally."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(part)  # Python-Markdown's tables never split a row inside a code span
        else:
            part = part.replace("<", "&lt;").replace(">", "&gt;")
            out.append(part.replace("|", "\\|") if table else part)
    return "".join(out)


def _code(text: str) -> str:
    return f"`{text}`"


def _help_paragraphs(text: str) -> str:
    """Click help text to Markdown: ``\\b`` (no-rewrap) markers dropped, paragraphs kept."""
    lines = [line for line in (text or "").splitlines() if line.strip() != "\b"]
    return _escape("\n".join(lines).strip())


# --- CLI -----------------------------------------------------------------------------------------------

def cli_commands() -> Iterator[tuple[str, Any, Any]]:
    """Yield ``(path, command, context)`` for every command of the ``folioflow`` CLI, depth first in
    ``--help`` order; ``path`` is the full invocation (``"folioflow eval ocr"``). Groups are yielded
    too (before their sub-commands)."""
    import typer

    from folioflow.flows.cli import app

    root = typer.main.get_command(app)
    root_ctx = root.context_class(root, info_name="folioflow")

    def walk(command: Any, ctx: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
        yield path, command, ctx
        for name in getattr(command, "commands", {}) or {}:
            sub = command.commands[name]
            if getattr(sub, "hidden", False):
                continue
            yield from walk(sub, sub.context_class(sub, info_name=name, parent=ctx), f"{path} {name}")

    yield from walk(root, root_ctx, "folioflow")


def cli_options(command: Any) -> list[str]:
    """Every option flag (``--k``, ``-k``, ``--all-chunks``, ...) a command accepts, ``--help`` included."""
    flags: list[str] = []
    for param in command.params:
        if getattr(param, "param_type_name", "") == "option":
            flags += list(param.opts) + list(param.secondary_opts)
    return flags + ["--help"]


def _anchor(path: str) -> str:
    return path.replace(" ", "-")


def cli_markdown() -> str:
    """The CLI reference as Markdown: a command index, then one section per command."""
    commands = list(cli_commands())
    lines = ["| command | what it does |", "| --- | --- |"]
    for path, command, _ctx in commands[1:]:
        summary = command.get_short_help_str(limit=200) if hasattr(command, "get_short_help_str") else ""
        lines.append(f"| [{_code(path)}](#{_anchor(path)}) | {_escape(summary, table=True)} |")
    lines.append("")
    for path, command, ctx in commands:
        level = "#" * min(2 + path.count(" "), 4)
        lines += [f"{level} `{path}` {{#{_anchor(path)}}}", ""]
        lines += ["```text", command.get_usage(ctx).strip(), "```", ""]
        if command.help:
            lines += [_help_paragraphs(command.help), ""]
        records = [(p, p.get_help_record(ctx)) for p in command.params if not getattr(p, "hidden", False)]
        records = [(p, r) for p, r in records if r]
        if records:
            lines += ["| parameter | description |", "| --- | --- |"]
            for param, (decl, help_text) in records:
                kind = "argument" if getattr(param, "param_type_name", "") == "argument" else ""
                decl_cell = _code(decl) + (f" ({kind})" if kind else "")
                lines.append(f"| {decl_cell} | {_escape(help_text or '', table=True)} |")
            lines.append("| `--help` | Show the help text and exit. |")
            lines.append("")
        if getattr(command, "commands", None):
            subs = ", ".join(f"[{_code(f'{path} {name}')}](#{_anchor(f'{path} {name}')})" for name in command.commands)
            lines += [f"Sub-commands: {subs}.", ""]
    return "\n".join(lines)


# --- settings ------------------------------------------------------------------------------------------

def _type_name(annotation: Any) -> str:
    """A readable type: ``list[str]``, ``str | None``, ``'auto' | 'text'`` (Literal values)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(v) for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if hasattr(value, "as_posix"):
        value = value.as_posix()
    return f"`{value!r}`"


def settings_env_names(name: str, field: Any) -> list[str]:
    """The environment variables that set a :class:`Settings` field: ``FOLIOFLOW_<NAME>`` and any
    upper-case alias (``QDRANT_URL``)."""
    names = [f"FOLIOFLOW_{name.upper()}"]
    alias = field.validation_alias
    for choice in getattr(alias, "choices", []) or []:
        text = str(choice)
        if text.isupper() and text not in names:
            names.append(text)
    return names


def settings_markdown() -> str:
    """The settings reference table (one row per :class:`Settings` field)."""
    from folioflow.flows.settings import Settings

    lines = ["| setting (YAML key) | type | default | environment | description |",
             "| --- | --- | --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        env = "<br>".join(_code(e) for e in settings_env_names(name, field))
        lines.append(f"| `{name}` {{#{name}}} | {_code(_type_name(field.annotation))} | {_default(field)} | {env} | "
                     f"{_escape(field.description or '', table=True)} |")
    return "\n".join(lines)


def sources_markdown() -> str:
    """The table of one ``sources:`` entry's fields (:class:`SourceConfig`)."""
    from folioflow.flows.source_config import SourceConfig

    lines = ["| field | type | default | description |", "| --- | --- | --- | --- |"]
    for name, field in SourceConfig.model_fields.items():
        lines.append(f"| `{name}` | {_code(_type_name(field.annotation))} | {_default(field)} | "
                     f"{_escape(field.description or '', table=True)} |")
    return "\n".join(lines)


# --- mkdocs event --------------------------------------------------------------------------------------

def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the markers of the reference pages with the generated Markdown."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_markdown())
    if SETTINGS_MARKER in markdown:
        markdown = markdown.replace(SETTINGS_MARKER, settings_markdown())
    if SOURCES_MARKER in markdown:
        markdown = markdown.replace(SOURCES_MARKER, sources_markdown())
    return markdown
