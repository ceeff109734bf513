"""The discrete-event fleet simulation: instances, routing, the autoscaler, traces and the verdict
(`python -m bidi_tts_loadtest.fleet_sim`)."""
