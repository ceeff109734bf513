"""Entry point: `python -m reference_container.deploy`, the command CONTRACT.md pins.

The tool itself is the package `reference_container_deploy`, beside the runtime rather than inside it,
so that the container's image need not carry it (and does not: there this says so in one line).
"""

import sys

try:
    from reference_container_deploy.cli import main
except ModuleNotFoundError as exc:
    if exc.name != "reference_container_deploy":
        raise
    print("python -m reference_container.deploy: the deployment tool (reference_container_deploy) is not "
          "installed here; run it from a checkout (uv run ...) or an environment with the project's wheel",
          file=sys.stderr)
    raise SystemExit(2) from None  # the tool's usage code (reference_container_deploy.errors.ExitCode.USAGE)

raise SystemExit(main())
