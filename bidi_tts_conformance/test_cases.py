"""The conformance cases as pytest tests: one test per case, named by the case id.

Select with ``-k`` (``-k frames.binary``) or ``--case 'robust.*'``; list with ``--list-cases``.
"""

from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.plugin import CaseCollection

conformance_cases = CaseCollection(REGISTRY)
