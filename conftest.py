"""Root conftest: loads the conformance suite's pytest plugin (options, targets, reports).

The plugin adds its options to every run but starts a target only when a conformance case runs.
"""

pytest_plugins = ["conformance.plugin"]
