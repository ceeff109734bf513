"""A relay between a browser and a TTS container or SageMaker endpoint, and the listen page it serves.

The relay is the hop that agents put between a model and a user's browser. It forwards each
utterance the page sends to one upstream session (a container WebSocket, or
InvokeEndpointWithBidirectionalStream) and hands the audio back in one of the two shapes agents
use: raw PCM in binary WebSocket frames (``/ws``), or base64 PCM inside server-sent events
(``POST /sse``). It stamps its own timings on every turn so the page can split the time to first
audible audio into the container's first byte, the relay hop, and the browser's decode and buffer.

- :mod:`loadtest.relay.upstream`: which upstream, and opening a session to it;
- :mod:`loadtest.relay.turns`: one turn (plain text, or a simulated LLM token stream through the
  chunker) over an upstream session, as shape-neutral events;
- :mod:`loadtest.relay.app`: the Starlette app with both shapes and the static listen page;
- :mod:`loadtest.relay.server`: binding and running it (``python -m loadtest.relay``).
"""
