"""`pytest conformance`: the suite's cases (from the installed `bidi_tts_conformance` package) and
the Hypothesis property tests of the client library's core (`conformance/properties/`)."""
