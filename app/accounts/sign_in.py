"""Who is using the lab: optional sign-in for a class box, and the person a run belongs to.

Sign-in is Streamlit's own (`st.login`, OpenID Connect with the university's identity
provider), on when `.streamlit/secrets.toml` (or `--secrets.files`) has an `[auth]` section;
then every page asks for it first. It is off by default, so the one-command laptop start
stays open. A run link still opens for whoever holds it (a run id is a capability).

A person is the signed-in account's e-mail or, without sign-in, this browser (a digest of
Streamlit's XSRF cookie token, which the browser keeps across tabs and reloads): /train
lists "my runs" by it and holds each person to attention_lab.serving.quota's limits.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from typing import Any

import streamlit as st

from attention_lab.frame.markdown_safe import md_text
from attention_lab.frame.streamlit_private import XSRF_COOKIE, browser_token, script_session_id

RETURN_KEY = "attention_lab_return"  # sessionStorage: the link a person opened before signing in
_RETURNED = "_access_returned"  # session_state: the link after sign-in was reopened (once a session)
_LOG = logging.getLogger(__name__)


def _auth_section() -> dict[str, Any]:
    """The [auth] secrets (empty without a secrets file or section)."""
    try:
        return dict(st.secrets.get("auth", {}))
    except (FileNotFoundError, OSError, ValueError):  # no or unreadable secrets: sign-in is off
        return {}


def sign_in_on() -> bool:
    return bool(_auth_section())


def providers() -> list[tuple[str | None, str]]:
    """(provider for st.login, its name on the button): the [auth] section itself when it
    holds a client_id, else each [auth.<name>] sub-section that does."""
    auth = _auth_section()
    if "client_id" in auth:
        return [(None, str(auth.get("display_name", "your account")))]
    return [
        (name, str(section.get("display_name", name)))
        for name, section in auth.items()
        if isinstance(section, Mapping) and "client_id" in section
    ]


def signed_in_email() -> str | None:
    """The e-mail (lower-case) of the person signed in; None without sign-in or without one."""
    user = st.user  # without sign-in configured it has no is_logged_in at all
    if not user.get("is_logged_in"):
        return None
    return str(user.get("email") or user.get("sub") or "").lower() or None


def person_id() -> str:
    """Whom a run belongs to: the signed-in e-mail, else 'browser <digest>' of this browser's
    XSRF token (else of this session, where the cookie is missing)."""
    if email := signed_in_email():
        return email
    cookie = st.context.cookies.get(XSRF_COOKIE, "")  # not a str where there is no browser (AppTest)
    seed = browser_token(cookie if isinstance(cookie, str) else "") or script_session_id()
    return "browser " + hashlib.sha256(seed.encode()).hexdigest()[:16]


def person_label(owner: str) -> str:
    """How a run's owner is shown: the e-mail, 'a browser' for one without sign-in."""
    return "a browser (no sign-in)" if owner.startswith("browser ") else owner or "—"


def _script(body: str) -> None:
    st.html(f"<script>{body}</script>", unsafe_allow_javascript=True)


def gate() -> None:
    """Where sign-in is on and nobody is signed in: the sign-in page instead of the page
    asked for (its link is kept and reopened after sign-in), then st.stop()."""
    if not sign_in_on():
        return
    if st.user.get("is_logged_in"):
        if not st.session_state.get(_RETURNED):
            st.session_state[_RETURNED] = True
            _LOG.info("signed in: %s", signed_in_email() or "an account without an e-mail")
            _script(
                f"const to = sessionStorage.getItem({json.dumps(RETURN_KEY)});"
                f"sessionStorage.removeItem({json.dumps(RETURN_KEY)});"
                "const here = window.parent.location;"
                "if (to && to.startsWith('/') && !to.startsWith('//') && to !== here.pathname + here.search)"
                "  here.replace(to);"
            )
        return
    st.title("Attention Lab", anchor=False)
    st.markdown(
        "This lab is for a class. **Sign in** with your account to open it; "
        "the link you opened comes back after you sign in."
    )
    _script(
        "const here = window.parent.location;"
        "if (here.pathname + here.search !== '/')"
        f"  sessionStorage.setItem({json.dumps(RETURN_KEY)}, here.pathname + here.search);"
    )
    for provider, name in providers() or [(None, "")]:
        if not name:  # [auth] without a provider's client_id: the admin's setup is unfinished
            st.error(
                "Sign-in is switched on for this lab, but no identity provider is set up: the admin "
                "needs to add `client_id`, `client_secret` and `server_metadata_url` to the `[auth]` "
                "secrets (the docs: Host it, “Sign-in”).",
                icon=":material/settings_alert:",
            )
        elif st.button(f"Sign in with {name}", icon=":material/login:", type="primary", key=f"login_{name}"):
            st.login(provider) if provider else st.login()
    st.stop()


def account_panel() -> None:
    """The sidebar's line on who is signed in, with Sign out (only where sign-in is on)."""
    if not sign_in_on() or not st.user.get("is_logged_in"):
        return
    with st.sidebar:
        st.caption(f"Signed in as **{md_text(signed_in_email() or 'you')}**")
        if st.button("Sign out", icon=":material/logout:", key="sign_out"):
            st.logout()
