"""Root conftest: loads the conformance suite's pytest plugin (options, targets, reports).

An installed project registers the same module through its `pytest11` entry point; naming it here
too lets a checkout run without being installed. The plugin adds its options to every run but
starts a target only when a conformance case runs.
"""

pytest_plugins = ["bidi_tts_conformance.plugin"]
