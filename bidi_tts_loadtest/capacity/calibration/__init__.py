"""The calibration of a timed-backend profile, in three steps: measure a container at one session
(:mod:`.measure`), fit the costs by least squares (:mod:`.fit`), write and read the profile file
(:mod:`.profile_file`). :mod:`bidi_tts_loadtest.capacity.calibrate` runs them in that order."""
