"""Profile registry, the figures each profile carries, and request bodies."""

import pytest

from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.vlm.parsers.markdown import parse_markdown
from folioflow.ocr.vlm.profiles import (
    Profile,
    get_profile,
    profile_for_model,
    profile_names,
    register_profile,
)
from folioflow.ocr.vlm.request import build_body

LETTER = (612.0, 792.0)


def test_builtin_profiles_are_registered():
    assert set(profile_names()) >= {"chandra", "deepseek-ocr", "olmocr", "markdown"}
    with pytest.raises(ConfigurationError, match="unknown VLM profile"):
        get_profile("tesseract")


def test_chandra_sizing_is_at_least_192_dpi_and_area_capped():
    sizing = get_profile("chandra").sizing
    assert sizing.scale_for(*LETTER) * 72 == pytest.approx(192)
    big = (2000.0, 3000.0)  # a poster: 192 dpi would be 5333 x 8000 px
    scale = sizing.scale_for(*big)
    assert big[0] * scale * big[1] * scale == pytest.approx(3072 * 2048, rel=1e-6)
    small = (200.0, 300.0)  # short side raised to 1024 px
    assert min(small) * sizing.scale_for(*small) == pytest.approx(1024)


def test_olmocr_longest_side_is_1288_px():
    sizing = get_profile("olmocr").sizing
    assert max(LETTER) * sizing.scale_for(*LETTER) == pytest.approx(1288)
    assert 842 * sizing.scale_for(842, 595) == pytest.approx(1288)  # landscape A4


@pytest.mark.parametrize("mode, side", [("tiny", 512), ("small", 640), ("base", 1024), ("large", 1280)])
def test_deepseek_resolution_modes(mode, side):
    profile = get_profile(f"deepseek-ocr:{mode}")
    assert profile.name == f"deepseek-ocr:{mode}"
    assert max(LETTER) * profile.sizing.scale_for(*LETTER) == pytest.approx(side)


def test_deepseek_default_gundam_and_request_fields():
    profile = get_profile("deepseek-ocr")
    assert profile.sizing.scale_for(*LETTER) * 72 == pytest.approx(144)
    body = build_body(profile, "data:image/png;base64,AAAA", 0)
    assert body["skip_special_tokens"] is False
    assert body["vllm_xargs"] == {
        "ngram_size": 30,
        "window_size": 90,
        "whitelist_token_ids": [128821, 128822],
    }
    assert body["messages"][0]["content"][0]["type"] == "image_url"
    assert body["messages"][0]["content"][1]["text"] == "<|grounding|>Convert the document to markdown."
    with pytest.raises(ConfigurationError):
        get_profile("deepseek-ocr:huge")


def test_olmocr_body_puts_the_prompt_first_and_climbs_the_ladder():
    profile = get_profile("olmocr")
    temps = [build_body(profile, "data:x", a)["temperature"] for a in range(10)]
    assert temps == [0.1, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 1.0, 1.0, 1.0]
    body = build_body(profile, "data:x", 0, guided=True, max_tokens=100, extra={"temperature": 0.0})
    assert [c["type"] for c in body["messages"][0]["content"]] == ["text", "image_url"]
    assert body["structured_outputs"]["regex"].startswith("---\\nprimary_language")
    assert body["max_tokens"] == 100 and body["temperature"] == 0.0  # extra fields win


def test_chandra_ladder_and_top_p():
    profile = get_profile("chandra")
    first, second = build_body(profile, "data:x", 0), build_body(profile, "data:x", 1)
    assert (first["temperature"], first["top_p"]) == (0.0, 0.1)
    assert (second["temperature"], second["top_p"]) == (0.3, 0.95)
    assert "Bboxes are normalized 0-1024" in profile.prompt and first["max_tokens"] == 12384


def test_profile_for_served_model_ids():
    assert profile_for_model("datalab-to/chandra").name == "chandra"
    assert profile_for_model("allenai/olmOCR-2-7B-1025-FP8").name == "olmocr"
    assert profile_for_model("deepseek-ai/DeepSeek-OCR").name == "deepseek-ocr"
    assert profile_for_model("Qwen/Qwen2.5-VL-7B-Instruct").name == "markdown"
    assert get_profile("chandra").matches_model("chandra") and not get_profile("chandra").matches_model(
        "olmocr"
    )


def test_fingerprint_changes_with_what_changes_output():
    profile = get_profile("markdown")
    assert profile.fingerprint() == get_profile("markdown").fingerprint()
    assert profile.model_copy(update={"max_tokens": 10}).fingerprint() != profile.fingerprint()
    assert profile.model_copy(update={"prompt": "x"}).fingerprint() != profile.fingerprint()


def test_registering_a_new_profile(monkeypatch):
    from folioflow.ocr.vlm import profiles

    monkeypatch.setattr(profiles, "_REGISTRY", dict(profiles._REGISTRY))
    register_profile(
        "acme-ocr",
        lambda variant: Profile(
            name="acme-ocr", prompt="OCR.", parser=parse_markdown, model_patterns=("acme",)
        ),
    )
    assert get_profile("acme-ocr").prompt == "OCR." and profile_for_model("acme/ocr-1").name == "acme-ocr"
    with pytest.raises(ConfigurationError):
        register_profile("Bad:Name", lambda v: get_profile("markdown"))
