"""Toy containers for tests: a correct, fast protocol server with a tone "synthesizer" and
deliberately broken variants. They speak the wire protocol, not speech: never use them to judge
audio quality. The reference container (real Kokoro) lives in reference_container/."""
