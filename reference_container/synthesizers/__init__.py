"""Speech synthesizers behind one seam (:class:`base.Synthesizer`); the web layer knows no model."""
