"""Entry point: `python -m reference_container.deploy`."""

from reference_container.deploy.cli import main

raise SystemExit(main())
