"""Settings precedence: explicit > environment > config file > defaults; secrets never print."""

from __future__ import annotations

import pytest

from folioflow.flows.settings import load_settings
from folioflow.ocr.errors import ConfigurationError


def test_defaults(monkeypatch):
    monkeypatch.delenv("QDRANT_URL", raising=False)
    settings = load_settings()
    assert str(settings.data_dir) == ".folioflow"
    assert settings.engine == "auto"
    assert settings.qdrant_url is None


def test_precedence_file_env_override(tmp_path, monkeypatch):
    config = tmp_path / "folioflow.yaml"
    config.write_text("collection: from_file\nworkers: 3\nqdrant_url: http://file:6333\n")
    monkeypatch.setenv("QDRANT_URL", "http://env:6333")
    settings = load_settings(config)
    assert settings.collection == "from_file"  # file beats default
    assert settings.qdrant_url == "http://env:6333"  # env beats file
    assert load_settings(config, workers=7, collection=None).workers == 7  # explicit beats file; None ignored


def test_secret_is_masked(monkeypatch):
    monkeypatch.setenv("QDRANT_API_KEY", "s3cr3t-key")
    settings = load_settings()
    assert settings.qdrant_api_key.get_secret_value() == "s3cr3t-key"
    assert "s3cr3t-key" not in repr(settings)
    assert "s3cr3t-key" not in settings.model_dump_json()


def test_invalid_value_names_the_field(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("engine: magic\n")
    with pytest.raises(ConfigurationError, match="engine"):
        load_settings(config)


def test_csv_lists_from_environment(monkeypatch):
    monkeypatch.setenv("FOLIOFLOW_OCR_ENDPOINTS", "http://a:8000, http://b:8000")
    assert load_settings().ocr_endpoints == ["http://a:8000", "http://b:8000"]


def test_precedence_every_layer_with_real_env_and_file(tmp_path, monkeypatch):
    """CLI overrides > environment > YAML file > defaults, one field per boundary."""
    config = tmp_path / "folioflow.yaml"
    config.write_text("dpi: 100\nworkers: 3\ncollection: from_file\nlanguages: [deu, fra]\n")
    monkeypatch.setenv("FOLIOFLOW_DPI", "300")
    monkeypatch.setenv("FOLIOFLOW_WORKERS", "5")
    settings = load_settings(config, workers=9)
    assert settings.workers == 9  # explicit beats environment and file
    assert settings.dpi == 300  # environment beats file
    assert settings.collection == "from_file"  # file beats default
    assert settings.languages == ["deu", "fra"]
    assert settings.engine == "auto"  # default


def test_lower_case_environment_name_beats_the_file(tmp_path, monkeypatch):
    """pydantic-settings reads the environment case-insensitively: ``folioflow_dpi`` sets ``dpi``,
    and it beats the file as its upper-case form does (the hand-written check before the
    YamlConfigSettingsSource swap compared names case-sensitively, so the file won)."""
    config = tmp_path / "folioflow.yaml"
    config.write_text("dpi: 100\nqdrant_url: http://file:6333\n")
    monkeypatch.delenv("FOLIOFLOW_DPI", raising=False)
    monkeypatch.delenv("QDRANT_URL", raising=False)
    monkeypatch.setenv("folioflow_dpi", "250")
    monkeypatch.setenv("qdrant_url", "http://env:6333")
    settings = load_settings(config)
    assert settings.dpi == 250
    assert settings.qdrant_url == "http://env:6333"


def test_config_file_from_environment(tmp_path, monkeypatch):
    config = tmp_path / "env-named.yaml"
    config.write_text("collection: named_by_env\n")
    monkeypatch.setenv("FOLIOFLOW_CONFIG", str(config))
    assert load_settings().collection == "named_by_env"
    assert load_settings(collection="cli").collection == "cli"


@pytest.mark.parametrize(
    ("text", "message"),
    [("- a\n- b\n", "expected a mapping"), ("dpi: [unclosed\n", "cannot read config"), ("colour: red\n", "colour")],
)
def test_bad_config_file_is_a_configuration_error(tmp_path, text, message):
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    with pytest.raises(ConfigurationError, match=message):
        load_settings(config)


def test_missing_config_file_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigurationError, match="no such file"):
        load_settings(tmp_path / "absent.yaml")


def test_file_does_not_leak_into_the_next_settings(tmp_path):
    config = tmp_path / "folioflow.yaml"
    config.write_text("collection: from_file\n")
    assert load_settings(config).collection == "from_file"
    assert load_settings().collection == "folioflow"
