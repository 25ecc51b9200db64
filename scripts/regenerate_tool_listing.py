"""Write rl_advisor/tool_listing.json: the MCP tool definitions, derived from the tools' typed
signatures, that rl-advisor-mcp answers tools/list with before importing any tool module.

    .venv/bin/python scripts/regenerate_tool_listing.py

tests/test_tool_surface.py fails when the file differs from a fresh derivation (after a tool, its
signature, its result model or its ToolSpec changed).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rl_advisor.mcp_server import LISTING_FILE, write_listing  # noqa: E402

if __name__ == "__main__":
    write_listing(LISTING_FILE)
    print(f"wrote {LISTING_FILE}")
