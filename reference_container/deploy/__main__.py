"""Entry point: `python -m reference_container.deploy`, the command CONTRACT.md pins.

The tool itself is the package `reference_container_deploy`, beside the runtime rather than inside it,
so that the container's image need not carry it.
"""

from reference_container_deploy.cli import main

raise SystemExit(main())
