"""Who owns the runs this browser starts: one secret owner token per browser (app/jobs/owners.py). Streamlit starts
a new session on every reload, so the token lives in the browser's cookie OWNER_COOKIE too: a session reads it from
the cookies its browser sent (st.context.cookies), and the page writes it back with a small script (st.html), which
also renews it. No cookie (a first visit, cookies cleared, a private window's first page) gives a new token. The
token is never in a link: a copied link opens the same runs read-only."""
from __future__ import annotations

import streamlit as st

from app.jobs import OWNER_COOKIE, cookie_script, new_owner_token, owner_from_cookie

STATE_KEY = "train_owner"  # the session's token (tests set it to act as one browser or another)


def sent_cookies():
    """The cookies this session's browser sent when it connected (none without a browser, as in AppTest)."""
    return st.context.cookies


def browser_owner() -> str:
    """This browser's owner token: the session's, else the browser's cookie's, else a new one; and the cookie
    written (or renewed) with it, in a hidden box."""
    token = st.session_state.get(STATE_KEY)
    if not isinstance(token, str) or not token:
        token = owner_from_cookie(sent_cookies().get(OWNER_COOKIE)) or new_owner_token()
        st.session_state[STATE_KEY] = token
    if owner_from_cookie(token):  # a test's made-up token is not written
        with st.container(key="atlas-owner"):  # nothing to see
            st.html("<style>.st-key-atlas-owner{display:none}</style>" + cookie_script(token),
                    unsafe_allow_javascript=True)
    return token
