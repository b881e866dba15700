"""Sign-in and who a person is (lab/access.py), through Streamlit's AppTest: with `[auth]`
secrets every page shows only the sign-in button; without them, nothing changes; a browser
is one person across page loads (its XSRF token, whatever mask the cookie carries)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.accounts.sign_in import browser_token

ROOT = Path(__file__).resolve().parents[2]

AUTH = {
    "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
    "cookie_secret": "a-cookie-secret-for-this-test-only-0123456789",
    "client_id": "attention-lab",
    "client_secret": "any",
    "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
    "display_name": "University login",
}


def xsrf_cookie(token: bytes, mask: bytes) -> str:
    """Streamlit's XSRF cookie format 2: 2|mask|token XOR mask|timestamp (hex)."""
    masked = bytes(b ^ mask[i % len(mask)] for i, b in enumerate(token))
    return f"2|{mask.hex()}|{masked.hex()}|1764000000"


def test_a_browser_is_one_person_whatever_mask_its_cookie_carries() -> None:
    token = os.urandom(16)
    a, b = xsrf_cookie(token, os.urandom(4)), xsrf_cookie(token, os.urandom(4))
    assert a != b and browser_token(a) == browser_token(b) == token.hex()
    assert browser_token(f'"{a}"') == token.hex()  # quoted as some servers send it
    assert browser_token(xsrf_cookie(os.urandom(16), os.urandom(4))) != token.hex()
    for bad in ("", "garbage", "2|zz|yy|1", "1|00|00|1", "2|" + "|".join(["ab"] * 5)):
        assert browser_token(bad) == ""


@pytest.mark.parametrize("page", ["views/home.py", "views/gpt.py", "views/train.py", "views/admin.py"])
def test_with_auth_secrets_every_page_shows_only_the_sign_in(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60)
    at.secrets["auth"] = AUTH
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Attention Lab"]
    assert [b.label for b in at.button] == ["Sign in with University login"]
    assert not at.sidebar.children or all(not c.children for c in at.sidebar.children)
    assert "This lab is for a class" in at.markdown[0].value


def test_without_auth_secrets_the_lab_stays_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60)
    at.run()
    at.switch_page("views/train.py")
    at.run()
    assert not at.exception
    assert at.title[0].value == "Train a model"
    assert "Sign in with University login" not in [b.label for b in at.button]
    assert "Sign out" not in [b.label for b in at.button]


def test_auth_without_a_provider_says_what_the_admin_must_add(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60)
    at.secrets["auth"] = {"redirect_uri": AUTH["redirect_uri"], "cookie_secret": AUTH["cookie_secret"]}
    at.run()
    assert not at.exception and not at.button  # no way in, and it says why
    assert "no identity provider is set up" in at.error[0].value and "client_id" in at.error[0].value


def test_several_providers_get_a_button_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path / "runs"))
    provider = {k: AUTH[k] for k in ("client_id", "client_secret", "server_metadata_url")}
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60)
    at.secrets["auth"] = {
        "redirect_uri": AUTH["redirect_uri"],
        "cookie_secret": AUTH["cookie_secret"],
        "campus": {**provider, "display_name": "Campus login"},
        "guests": provider,  # no display_name: the section's name
    }
    at.run()
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in with Campus login", "Sign in with guests"]
