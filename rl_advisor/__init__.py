"""rl-advisor's faces: the CLI, the MCP server and the tool registry they share."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("rl-advisor")
except _metadata.PackageNotFoundError:  # running from a source checkout
    __version__ = "0.1.0"
