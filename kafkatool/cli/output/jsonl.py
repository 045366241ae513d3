"""The jsonl format: one plain ``json.dumps`` object per line (never through rich, which wraps), the lines SCHEMA.md
describes."""

from __future__ import annotations

from typing import Any


def _json(d: dict[str, Any]) -> str:
    """``json.dumps(d)``; json is imported on first use (~1 ms of a run's start), as text output seldom needs it."""
    import json

    return json.dumps(d)
