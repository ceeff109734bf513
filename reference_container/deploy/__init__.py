"""Only the pinned command's name: `python -m reference_container.deploy` runs `reference_container_deploy`."""
