"""The guard tests drive the real CLI like tests/cli does: reuse its fixtures."""

from cli.conftest import cli_env, project, run_cli  # noqa: F401
