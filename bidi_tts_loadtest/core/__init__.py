"""The floor of the load tools: one turn over one target (turn, target, async_bridge), the session loop
the capacity sweep and the ladders share, the answers corpus, the reachability check, the container
under test, the run settings and exit codes. It imports nothing else of `bidi_tts_loadtest`."""
