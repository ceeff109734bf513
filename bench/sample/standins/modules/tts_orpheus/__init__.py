"""STAND-IN package root for the sample's `tts_orpheus`: its real `prompt.py` from SAMPLE_ORPHEUS_DIR,
a stand-in `snac_decode` (SNAC needs torch weights from the hub and a GPU) from here."""

import os

_real = os.environ.get("SAMPLE_ORPHEUS_DIR")
if _real:
    __path__.append(os.path.join(_real, "tts_orpheus"))
