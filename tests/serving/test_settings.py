"""Settings are parsed in one place: each bad value is a ConfigError naming the variable
and the value, on the command line and on every page (never a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.serving import settings
from transformer_core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ATTENTION_LAB_TORCH_THREADS", "two", "'two' is not a whole number"),
        ("ATTENTION_LAB_TORCH_THREADS", "0", "must be >= 1, got 0"),
        ("ATTENTION_LAB_MAX_RUNS", "-1", "must be >= 1"),
        ("ATTENTION_LAB_RUN_MAX_SECONDS", "1.5", "not a whole number"),
        ("ATTENTION_LAB_RUNS_MAX_MB", "nan", "must be > 0"),
        ("ATTENTION_LAB_RUN_NICE", "-3", "must be >= 0"),
        ("ATTENTION_LAB_DEVICE", "tpu", "'tpu' is not one of auto, cpu, cuda"),
        ("ATTENTION_LAB_ADMINS", "alice@example.org,bob", "'bob' is not an e-mail address"),
        ("ATTENTION_LAB_ADMINS", "a b@example.org", "is not an e-mail address"),
        ("ATTENTION_LAB_ADMINS", "@example.org", "is not an e-mail address"),
        ("ATTENTION_LAB_ADMIN_TOKEN", "short", "must be at least 16 characters, got 5"),  # never echoed
    ],
)
def test_a_bad_value_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=rf"^{name}: .*{message}"):
        settings.check_all()


def test_defaults_and_good_values(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ATTENTION_LAB_TORCH_THREADS", "ATTENTION_LAB_DEVICE", "ATTENTION_LAB_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    assert settings.torch_threads() >= 1 and settings.device_setting() == "auto"
    assert settings.redis_url() is None and settings.run_max_seconds() == 3600
    monkeypatch.setenv("ATTENTION_LAB_TORCH_THREADS", " 3 ")
    monkeypatch.setenv("ATTENTION_LAB_REDIS_URL", "redis://127.0.0.1:1/0")
    assert settings.torch_threads() == 3 and settings.redis_url() == "redis://127.0.0.1:1/0"


def test_a_page_names_a_bad_setting_instead_of_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_TORCH_THREADS", "two")
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60)
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "This server's settings need fixing: ATTENTION_LAB_TORCH_THREADS: 'two' is not a whole number"
    ]


def test_admin_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATTENTION_LAB_ADMINS", raising=False)
    monkeypatch.delenv("ATTENTION_LAB_ADMIN_TOKEN", raising=False)
    assert settings.admin_emails() == frozenset() and settings.admin_token() is None
    monkeypatch.setenv("ATTENTION_LAB_ADMINS", " Alice@Example.org, bob@example.org ,")
    monkeypatch.setenv("ATTENTION_LAB_ADMIN_TOKEN", " 0123456789abcdef ")
    assert settings.admin_emails() == {"alice@example.org", "bob@example.org"}
    assert settings.admin_token() == "0123456789abcdef"
