"""The API's OpenAPI schema, checked into the repository beside this module (``openapi.json``) so
that clients and reviewers see every change to it; a test asserts that the served schema equals
the checked-in one.

Regenerate after changing an endpoint or a model::

    python -m folioflow.flows.service.openapi            # rewrite flows/service/openapi.json
    python -m folioflow.flows.service.openapi --check    # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_PATH", "openapi_schema", "render"]

#: Where the checked-in schema lives (package data).
SCHEMA_PATH = Path(__file__).with_name("openapi.json")


def openapi_schema() -> dict[str, Any]:
    """The schema the app serves at ``/openapi.json`` (built without starting the app: no model or
    store is loaded)."""
    from folioflow.flows.service.app import create_app
    from folioflow.flows.service.config import ApiSettings
    from folioflow.flows.settings import Settings

    return create_app(Settings(), ApiSettings()).openapi()


def render(schema: dict[str, Any]) -> str:
    """The checked-in text of ``schema``: indented JSON with sorted keys and a final newline."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write (or --check) the checked-in OpenAPI schema of folioflow api")
    parser.add_argument("--check", action="store_true", help="exit 1 when the checked-in schema is stale")
    parser.add_argument("--output", type=Path, default=SCHEMA_PATH, help="where to write it")
    args = parser.parse_args(argv)
    text = render(openapi_schema())
    if args.check:
        current = args.output.read_text() if args.output.is_file() else ""
        if current != text:
            print(f"{args.output} is stale: run python -m folioflow.flows.service.openapi", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
