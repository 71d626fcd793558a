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
