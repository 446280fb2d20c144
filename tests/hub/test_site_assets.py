"""The course site's pages under the hub, in Chromium, after one sign-in: every asset
(the theme's icon webfonts among them, which a browser fetches in CORS mode) loads
with the session's cookie, and no page view sends the browser through the hub's
sign-in again or mints a hub API token."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.hub.test_class_browser import LESSON, browser_sign_in

VIEWS = 20
PAGES = ("book/intro.html", LESSON, "book/exercises/update_with_donate.html")
SIGN_IN = ("/hub/login", "/hub/api/oauth2/authorize", "/oauth_callback")
ICON_FONT = '900 16px "Font Awesome 6 Free"'


def hub_tokens(hub) -> int:
    """The hub's API tokens, all users' and services' (read from its own database)."""
    with sqlite3.connect(Path(hub.env["HUB_STATE"]) / "jupyterhub.sqlite") as db:
        return db.execute("SELECT count(*) FROM api_tokens").fetchone()[0]


def test_page_views_after_sign_in_mint_no_token_and_load_the_icon_fonts(hub, accounts, browser):
    made, _ = accounts
    page = browser_sign_in(browser, hub, made["bob"])
    page.wait_for_load_state("networkidle")
    # every view fetches every asset again, as a first visit does (nothing from the cache)
    page.context.new_cdp_session(page).send("Network.setCacheDisabled", {"cacheDisabled": True})
    seen = []
    page.on("request", lambda r: seen.append(r.url))
    fonts = []
    page.on("response", lambda r: fonts.append((r.url, r.status)) if ".woff2" in r.url else None)
    before = hub_tokens(hub)
    for view in range(VIEWS):
        page.goto(hub.url("/services/course/" + PAGES[view % len(PAGES)]), wait_until="networkidle")
    after = hub_tokens(hub)

    loops = [url for url in seen if any(step in url for step in SIGN_IN)]
    assert not loops, f"{len(loops)} sign-in round trips in {VIEWS} page views: {loops[:6]}"
    assert after == before, f"{after - before} hub API tokens minted by {VIEWS} page views"
    assert fonts and all(status == 200 for _, status in fonts), fonts
    page.evaluate("() => document.fonts.ready")
    assert page.evaluate(f"() => document.fonts.check({ICON_FONT!r})")
    loaded = page.evaluate("() => [...document.fonts].filter(f => f.status === 'loaded')"
                           ".map(f => f.family)")
    assert any("Font Awesome" in family for family in loaded), loaded
    page.context.close()
