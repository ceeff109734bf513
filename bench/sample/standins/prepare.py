"""What each sample container needs before and after its protocol file is imported.

Nothing here edits the sample's code. Before the import: stand-in packages on `sys.path` (appended,
so installed real ones win), spaCy's model name for misaki offline, kokoro's KPipeline given local
weights and voices, Chatterbox's voice folder, the stand-in vLLM server. After the import, for vllm
only: the proxy's hard-coded `http://localhost:8000` client pointed at the stand-in's port.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

MODULES = Path(__file__).resolve().parent / "modules"
PROTOCOL_FILES = {"kokoro": "serve.py", "kokoro-cpu": "serve.py", "chatterbox": "streaming_proxy.py",
                  "vllm": "streaming_proxy.py"}
_vllm_url: str | None = None


class StandInError(RuntimeError):
    """A stand-in cannot be set up (one line for the user)."""


def _offline_g2p() -> None:
    from reference_container.g2p import install_spacy_shim, set_offline_env

    set_offline_env()
    install_spacy_shim()


def before_import(container: str, path: Path) -> None:
    if str(MODULES) not in sys.path:
        sys.path.append(str(MODULES))
    _offline_g2p()
    if container == "kokoro":
        from bench.sample.standins import torch_pipeline

        torch_pipeline.install()
    elif container == "chatterbox":
        from bench.sample.standins import chatterbox_voices

        os.environ.setdefault("VOICES_DIR", str(chatterbox_voices.write(Path(tempfile.mkdtemp(prefix="cbx-")))))
        os.environ.setdefault("MODEL_DIR", tempfile.mkdtemp(prefix="cbx-model-"))
    elif container == "vllm":
        global _vllm_url
        orpheus = _orpheus_dir(path)
        os.environ["SAMPLE_ORPHEUS_DIR"] = str(orpheus)
        from bench.sample.standins import vllm_server

        _vllm_url = vllm_server.start_in_thread()


def _orpheus_dir(path: Path) -> Path:
    """The folder holding the sample's own `tts_orpheus/prompt.py` (searched above the container)."""
    for parent in path.parents:
        found = sorted(parent.glob("**/tts_orpheus/prompt.py"))
        if found:
            return found[0].parent.parent
        if parent.name == "packages" or (parent / ".git").exists():
            break
    raise StandInError(f"no tts_orpheus/prompt.py under {path.parents[2]} (the vllm proxy imports it; "
                       "fetch it beside the containers)")


def after_import(container: str, module: ModuleType) -> None:
    if container == "vllm" and _vllm_url is not None:
        import httpx

        module._client = httpx.AsyncClient(base_url=_vllm_url, timeout=120.0)  # type: ignore[attr-defined]  # its timeout
