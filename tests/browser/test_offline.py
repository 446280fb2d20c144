"""Nothing on the built site comes from the internet, thebe is served by the site
itself, and the learner JupyterLab answers the site's origin only with its token."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

MYST_ONLY = re.compile(r"\{[a-z][\w:-]*\}`|^\([\w-]+\)=|^(?:```|:::)\{", re.M)
REMOTE = re.compile(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", re.I)


def _remote_assets(html: str) -> list[str]:
    found = []
    for tag in re.findall(r"<(?:script|link|img|iframe|source|video|audio|embed|object)\b[^>]*>", html, re.I):
        for attr in re.findall(r"""\b(?:src|href|data|srcset)\s*=\s*["']([^"']*)""", tag, re.I):
            if REMOTE.match(attr.strip()):
                found.append(tag)
    for body in re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.S | re.I):
        found += [f"inline script: {m}" for m in re.findall(r"https?://[^\s\"'<>]+", body)
                  if "127.0.0.1" not in m and "localhost" not in m]
    for css in re.findall(r"<style\b[^>]*>(.*?)</style>", html, re.S | re.I) + re.findall(
            r"""style\s*=\s*["']([^"']*)""", html, re.I):
        found += [f"style: {m}" for m in re.findall(r"""(?:@import|url\()\s*["']?(?:https?:)?//[^)"']+""", css)]
    return found


def test_no_page_loads_a_script_style_or_font_from_the_internet(built_site):
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) >= 9
    problems = {str(p.relative_to(built_site)): _remote_assets(p.read_text(encoding="utf-8")) for p in pages}
    assert not {k: v for k, v in problems.items() if v}


def test_the_check_catches_a_cdn_script():
    assert _remote_assets('<script src="https://unpkg.com/thebe@0.8.2/lib/index.js"></script>')
    assert _remote_assets('<script>const THEBE_JS_URL = "https://unpkg.com/thebe"</script>')
    assert _remote_assets('<link rel="stylesheet" href="//fonts.googleapis.com/css">')
    assert not _remote_assets('<a href="https://jax.readthedocs.io/">docs</a><script src="_static/x.js"></script>')


def test_thebe_is_served_by_the_site(built_site):
    index = built_site / "_static" / "thebe" / "index.js"
    assert index.is_file() and index.stat().st_size > 100_000
    assert (built_site / "_static" / "thebe" / "thebe.css").is_file()
    runner = (built_site / "_static" / "course-run.js").read_text(encoding="utf-8")
    assert 'STATIC + "thebe/index.js"' in runner
    lesson = (built_site / "book/lessons/donate_argnums.html").read_text(encoding="utf-8")
    assert "course-run.js" in lesson and "unpkg" not in lesson and "sphinx-thebe.js" not in lesson


def test_lesson_notebooks_are_in_the_site(built_site):
    from tests.book.sitebuild import LESSONS, REPO

    for lesson in LESSONS:
        nb = json.loads((built_site / "_notebooks" / "lessons" / f"{lesson}.ipynb").read_text())
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
        assert any(c["cell_type"] == "code" and "jax" in "".join(c["source"]) for c in nb["cells"])
        # JupyterLab renders the prose: no MyST role, target or directive is left raw,
        # glued values are filled in, glued figures are attached
        prose = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
        raw = [m for text in prose for m in MYST_ONLY.findall(text)]
        assert not raw, (lesson, raw[:5])
        source = (REPO / "book" / "lessons" / f"{lesson}.md").read_text(encoding="utf-8")
        figures = sum("attachments" in c for c in nb["cells"])
        assert figures == source.count("{glue:figure}"), lesson


def _get(url: str, origin: str | None = None):
    request = urllib.request.Request(url, headers={"Origin": origin} if origin else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, dict(reply.headers)
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers)


def test_jupyterlab_answers_the_site_with_its_token_only(servers):
    site_origin = servers.site.rstrip("/")
    api = f"{servers.jupyter}/api/kernelspecs"
    status, headers = _get(f"{api}?token={servers.token}", site_origin)
    assert status == 200 and headers.get("Access-Control-Allow-Origin") == site_origin
    assert _get(api, site_origin)[0] == 403                       # no token
    assert _get(f"{api}?token=wrong", site_origin)[0] == 403      # wrong token
    status, headers = _get(f"{api}?token={servers.token}", "http://evil.example")
    # other origins cannot read it: the allowed origin is the site's, never theirs or "*"
    assert headers.get("Access-Control-Allow-Origin") in (None, site_origin)
    lab_status, _ = _get(f"{servers.jupyter}/api/status?token={servers.token}")
    assert lab_status == 200


def test_no_page_shows_a_path_of_the_machine_that_built_it(built_site):
    """Warnings on lesson pages show their message, not "/.../mlir.py:1365: UserWarning"."""
    import os
    import sys

    from tests.book.sitebuild import REPO

    machine = {str(REPO), os.path.realpath(sys.prefix), sys.base_prefix, "site-packages"}
    found = {}
    for page in sorted(built_site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        hits = sorted(m for m in machine if m in text)
        if hits:
            found[str(page.relative_to(built_site))] = hits
    assert not found
    lesson = (built_site / "book/lessons/donate_argnums.html").read_text(encoding="utf-8")
    assert "UserWarning: Some donated buffers were not usable" in lesson  # the message stays


def test_the_site_serves_the_current_course_scripts(built_site):
    """A changed book/_static file reaches the site even when no page changed."""
    from tests.book.sitebuild import REPO

    stale = [p.name for p in sorted((REPO / "book" / "_static").iterdir())
             if p.read_bytes() != (built_site / "_static" / p.name).read_bytes()]
    assert not stale
