"""CLI commands that are not one-to-one MCP tools (demo, diagnose FILE, serve, ...).

Each module here defines ``register(subparsers)``; it adds its subparser and sets
``_run=callable(namespace) -> exit code`` as a default. Discovered by rl_advisor.cli.
"""
