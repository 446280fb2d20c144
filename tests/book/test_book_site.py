"""Tests of the built course site (the book).

They check the HTML that `jupyter-book build` produced from the lessons: that
each page exists, that every glued number equals a fresh computation on the
pinned JAX, that the figures of donation are SVG images with alt text and their
rules, that the exercise links are real files,
and that nothing is loaded from the internet.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from autograder import exercises

from .recompute import EXPECTED
from .sitebuild import LESSONS, REPO, page

GLUE_ROLE = re.compile(r"\{glue(?::(\w*))?\}`([^`]+)`")
PASTED = re.compile(r'<span class="pasted-text">(.*?)</span>', re.S)


def glued_keys(lesson: str) -> list[str]:
    """Glue keys in the order the lesson's prose uses them (`{glue:text}` roles)."""
    source = (REPO / "book" / "lessons" / f"{lesson}.md").read_text(encoding="utf-8")
    keys = []
    for kind, key in GLUE_ROLE.findall(source):
        assert kind == "text", f"{lesson}: only {{glue:text}} roles are checked, found {{glue:{kind}}}"
        keys.append(key.split(":")[0])
    return keys


def pasted_values(html_text: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", v)).strip() for v in PASTED.findall(html_text)]


def links(html_text: str) -> list[tuple[str, str, str]]:
    """(class, href, text) of every <a> on a page."""
    out = []
    for attrs, body in re.findall(r"<a\s([^>]*)>(.*?)</a>", html_text, re.S):
        href = re.search(r'href="([^"]*)"', attrs)
        cls = re.search(r'class="([^"]*)"', attrs)
        text = html.unescape(re.sub(r"<[^>]+>", "", body)).strip()
        out.append((cls.group(1) if cls else "", href.group(1) if href else "", text))
    return out


def resolve(page_path: Path, href: str) -> Path:
    return (page_path.parent / unquote(urlparse(href).path)).resolve()


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_lesson_has_a_page(built_site, lesson):
    text = page(built_site, f"book/lessons/{lesson}.html")
    assert "<h1>" in text
    # the page was executed: it has code cell outputs, not just sources
    assert 'class="cell_output' in text
    index = page(built_site, "index.html") + page(built_site, "book/intro.html")
    assert f"lessons/{lesson}.html" in index, "the landing page does not link the lesson"


@pytest.mark.parametrize("lesson", LESSONS)
def test_glued_values_match_a_fresh_computation(built_site, lesson):
    keys = glued_keys(lesson)
    shown = pasted_values(page(built_site, f"book/lessons/{lesson}.html"))
    assert keys, f"{lesson} glues nothing into its prose"
    assert len(shown) == len(keys), (
        f"{lesson}: {len(keys)} glue roles in the source, {len(shown)} values on the page"
    )
    expected = EXPECTED[lesson]()
    unknown = sorted(set(keys) - set(expected))
    assert not unknown, f"{lesson}: glued keys with no independent recomputation: {unknown}"
    mismatches = {k: (s, expected[k]) for k, s in zip(keys, shown) if s != expected[k]}
    assert not mismatches, f"{lesson}: page value != fresh value: {mismatches}"


# the figures that show what donation does: (page, figure id, the rules behind them)
DONATION_FIGURES = (
    ("state_tree", "fig-alias-map",
     ("unnamed-outputs-get-fresh-buffers", "output-index-is-output-leaf",
      "half-width-leaf-offered-not-aliased")),
    ("lifetimes", "fig-live-trace",
     ("trace-old-state-live-while-referenced", "trace-donated-state-never-held-twice")),
)


@pytest.mark.parametrize("lesson,figure_id,rule_ids", DONATION_FIGURES)
def test_donation_figure_is_an_svg_with_alt_text_and_its_rules(built_site, lesson, figure_id, rule_ids):
    path = built_site / "book" / "lessons" / f"{lesson}.html"
    figure = re.search(rf'<figure[^>]*id="{figure_id}".*?</figure>', path.read_text(encoding="utf-8"), re.S)
    assert figure, f"no figure with id {figure_id} on the {lesson} page"
    img = re.search(r"<img\b[^>]*>", figure.group(0))
    assert img, f"{figure_id} has no image"
    alt = re.search(r'alt="([^"]*)"', img.group(0))
    assert alt and len(alt.group(1).split()) >= 10, f"{figure_id}: no alt text that describes it"
    target = resolve(path, re.search(r'src="([^"]+)"', img.group(0)).group(1))
    assert target.suffix == ".svg" and target.is_file(), target
    assert "<svg" in target.read_text(encoding="utf-8")[:2000], f"{target.name} is not an SVG"
    # the caption's own words, after Sphinx's "Fig. N" number, start with a word
    caption = re.search(r'<span class="caption-text">(.*?)</span>\s*<a', figure.group(0), re.S)
    assert caption and not _text(caption.group(1))[:1].isdigit(), figure_id
    records = {r["id"]: r for r in json.loads((built_site / "_static" / "rules.json").read_text())
               if r["page"] == f"book/lessons/{lesson}"}
    missing = [rid for rid in rule_ids if rid not in records]
    assert not missing, f"{figure_id}: rules not in _static/rules.json: {missing}"
    assert all(records[rid]["held"] for rid in rule_ids)


def test_compile_reuse_and_per_device_figures_are_gone(built_site):
    # the compile-reuse bars and the eight identical per-device pairs gave way to the above
    for lesson, figure_id in (("donate_argnums", "fig-compile-reuse"),
                              ("sharded_state", "fig-sharded-live-bytes")):
        assert f'id="{figure_id}"' not in page(built_site, f"book/lessons/{lesson}.html")


# --------------------------------------------------------------------------- lesson 5
def test_sharded_lesson_ran_on_eight_devices_and_shows_the_per_shard_warning(built_site):
    text = page(built_site, "book/lessons/sharded_state.html")
    # the executed first cell listed eight CPU devices, so the kernel was fresh
    assert "CpuDevice(id=7)" in text and "CpuDevice(id=8)" not in text
    # the warning is printed from warnings.catch_warnings: the per-shard shape, no file path
    assert "UserWarning: Some donated buffers were not usable: float32[8]." in text
    assert "site-packages" not in text and "mlir.py" not in text
    assert 'class="output stderr' not in text, "a warning reached the page through stderr"


def test_sharded_lesson_links_the_exercises_it_names(built_site):
    path = built_site / "book/lessons/sharded_state.html"
    # the lesson's own text: the site navigation links every exercise on every page
    article = re.search(r'<article class="bd-article"[^>]*>(.*?)</article>',
                        path.read_text(encoding="utf-8"), re.S)
    assert article, "no article element on the sharded_state page"
    hrefs = {resolve(path, href).name for _, href, _ in links(article.group(1))
             if href and not urlparse(href).scheme}
    assert {"donation_report.html", "fix_training_loop.html"} <= hrefs, hrefs


def test_jump_to_task_link_resolves(built_site):
    path = built_site / "book/lessons/donate_argnums.html"
    jumps = [href for _, href, t in links(path.read_text(encoding="utf-8")) if t == "jump to the task"]
    assert jumps, "no 'jump to the task' link on the donate_argnums page"
    for href in jumps:
        target = resolve(path, href)
        assert target.is_file(), f"{href} does not resolve to a built file"
        assert target.name == "update_with_donate.html"


def lesson_of(exercise):
    """The lesson an exercise's page says to read first (its ``**Read first:**`` line)."""
    text = (REPO / "book" / "exercises" / f"{exercise}.md").read_text(encoding="utf-8")
    found = re.search(r"\*\*Read first:\*\* \{doc\}`\.\./lessons/(\w+)`", text)
    assert found, f"book/exercises/{exercise}.md names no lesson to read first"
    return found.group(1)


# Each registered exercise and the lesson it is built on (the lesson must link it).
BUILT_ON = [(lesson_of(name), name) for name in exercises.names()]


def test_each_exercise_is_built_on_a_lesson_of_the_book():
    assert {lesson for lesson, _ in BUILT_ON} <= set(LESSONS), BUILT_ON


@pytest.mark.parametrize("lesson,exercise_name", BUILT_ON)
def test_each_lesson_links_the_exercise_built_on_it(built_site, lesson, exercise_name):
    path = built_site / f"book/lessons/{lesson}.html"
    exercise = built_site / f"book/exercises/{exercise_name}.html"
    # an exercise still being written is reached through the exercise index
    expected = exercise if exercise.is_file() else built_site / "book/exercises/index.html"
    # the lesson's own text, not the site navigation (which links every page)
    article = re.search(r'<article class="bd-article"[^>]*>(.*?)</article>', path.read_text(encoding="utf-8"), re.S)
    assert article, f"{lesson}: no article element on the page"
    targets = {resolve(path, href) for _, href, _ in links(article.group(1)) if href}
    assert expected.resolve() in targets, f"{lesson} does not link {expected.relative_to(built_site)}"


def test_practice_boxes_are_not_named_like_the_graded_exercises(built_site):
    titles = []
    for lesson in LESSONS:
        text = (built_site / f"book/lessons/{lesson}.html").read_text(encoding="utf-8")
        titles += [html.unescape(re.sub(r"<[^>]+>", "", t)).strip() for t in
                   re.findall(r'<p class="admonition-title">(.*?)</p>', text, re.S)]
    practice = [t for t in titles if t.startswith("Practice")]
    assert len(practice) >= 4, titles
    assert not [t for t in titles if re.match(r"(Solution to )?Exercise\b", t)], titles


def test_download_link_serves_the_released_notebook(built_site):
    path = built_site / "book/exercises/update_with_donate.html"
    downloads = [h for cls, h, _ in links(path.read_text(encoding="utf-8")) if "download" in cls]
    assert downloads, "the exercise page has no {download} link"
    for href in downloads:
        target = resolve(path, href)
        assert target.is_file(), f"download link {href} points to a missing file"
        assert target.name == "update_with_donate.ipynb"
        notebook = json.loads(target.read_text(encoding="utf-8"))
        assert notebook["nbformat"] == 4
    released = REPO / "exercises/release/update_with_donate/update_with_donate.ipynb"
    assert released.is_file(), "`make release` has not produced the notebook"
    assert target.read_bytes() == released.read_bytes(), "the download is not the released notebook"


def test_every_internal_link_resolves(built_site):
    for path in sorted(built_site.rglob("*.html")):
        for _, href, _ in links(path.read_text(encoding="utf-8")):
            parsed = urlparse(href)
            if parsed.scheme or parsed.netloc or not parsed.path or href.startswith("#"):
                continue
            assert resolve(path, href).exists(), f"{path.relative_to(built_site)}: {href}"


def test_no_asset_is_loaded_from_the_internet(built_site):
    remote = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", re.I)
    for path in sorted(built_site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", text, re.I):
            assert not remote.search(tag), f"{path.relative_to(built_site)} loads {tag}"
        lowered = text.lower()
        assert "mathjax" not in lowered, f"{path.relative_to(built_site)} references MathJax"
        for word in ("thebe", "binder", "colab"):
            assert f"{word}-button" not in lowered and f"launch-{word}" not in lowered, (path, word)
    for css in sorted(built_site.rglob("*.css")):
        text = css.read_text(encoding="utf-8", errors="replace")
        assert not re.search(r"""(?:@import|url\()\s*["']?(?:https?:)?//""", text), css


def test_lessons_show_the_expected_live_errors_and_warning(built_site):
    first = page(built_site, "book/lessons/donate_argnums.html")
    assert first.count("Array has been deleted") >= 3  # the array, a list alias, a dict alias
    assert "Some donated buffers were not usable" in first
    assert "previously donated in the same call" in first
    tree = page(built_site, "book/lessons/state_tree.html")
    assert "Some donated buffers were not usable: int32[]" in tree
    silent = page(built_site, "book/lessons/silent_donation.html")
    assert "Attempt to donate the same buffer twice" in silent  # the same array in two leaves
    assert "Array has been deleted" in silent  # w, consumed under jax.grad
    assert "Some donated buffers were not usable: float32[8]" in silent  # the direct loss call
    assert "donated_invars=(True, False)" in silent  # the forward half under jax.grad


RULES_SECTION = re.compile(r'<section id="what-this-page-asserts">(.*?)</section>', re.S)
RULE_ITEM = re.compile(r"<li\b[^>]*>(.*?)</li>", re.S)


def _text(fragment: str) -> str:
    # Sphinx's smart quotes make ' " ... typographic; the records keep them plain
    text = html.unescape(re.sub(r"<[^>]+>", "", fragment)).replace("\u2026", "...")
    return " ".join(text.translate(str.maketrans("\u2018\u2019\u201c\u201d", "''\"\"")).split())


@pytest.mark.parametrize("lesson", [f"lessons/{name}" for name in LESSONS] + ["intro"])
def test_each_page_lists_exactly_the_rules_its_build_recorded(built_site, lesson):
    # the list is what the hidden cells asserted through course_rules.rule, no more, no less
    records = [r for r in json.loads((built_site / "_static" / "rules.json").read_text())
               if r["page"] == f"book/{lesson}"]
    assert records, f"{lesson}: no rule recorded in _static/rules.json"
    section = RULES_SECTION.search(page(built_site, f"book/{lesson}.html"))
    assert section, f"{lesson}: no 'What this page asserts' section"
    shown = [_text(item) for item in RULE_ITEM.findall(section.group(1))]
    assert shown == [f"{r['id']}: {r['statement']}" for r in records]
    assert all(r["jax"] for r in records)


def test_each_list_says_where_the_last_drift_report_checked_it(built_site):
    # book/drift_report.json is the committed last report of `make drift`
    from scripts import drift_compare

    report = json.loads((REPO / "book" / "drift_report.json").read_text())
    for lesson in [f"lessons/{name}" for name in LESSONS] + ["intro"]:
        sentence = drift_compare.page_summary(report, f"book/{lesson}")
        assert sentence, f"{lesson}: the last drift report has no rule of this page"
        section = RULES_SECTION.search(page(built_site, f"book/{lesson}.html")).group(1)
        assert sentence in _text(section), lesson


def test_lessons_link_out_to_the_sources_they_cite(built_site):
    """JAX's own pages on donation and its change log, where a lesson cites them, are
    links a learner can follow, not names to search for."""
    wanted = {"donate_argnums": ("https://docs.jax.dev/en/latest/_autosummary/jax.jit.html",
                                 "https://docs.jax.dev/en/latest/buffer_donation.html"),
              "sharded_auto_axes": ("https://docs.jax.dev/en/latest/changelog.html",)}
    for lesson, urls in wanted.items():
        html = (built_site / "book" / "lessons" / f"{lesson}.html").read_text(encoding="utf-8")
        for url in urls:
            assert f'href="{url}"' in html, (lesson, url)


def test_the_core_path_s_reading_time_is_counted_from_its_lessons(built_site):
    """The intro shows the core lessons' word count (book/_ext/core_path.py), counted
    here again from the lessons as they are now."""
    import jupytext

    core = ("donate_argnums", "state_tree")
    words = sum(len(re.findall(r"\w+", c.source)) for name in core
                for c in jupytext.read(REPO / "book" / "lessons" / f"{name}.md").cells
                if c.cell_type == "markdown")
    text = re.sub(r"<[^>]+>", "", (built_site / "book" / "intro.html").read_text(encoding="utf-8"))
    assert re.search(rf"prose is\s+{words}\s+words, about\s+{round(words / 200)}\s+minutes", text), words


RULE_LINK = re.compile(r'<a class="[^"]*course-rule-link[^"]*" href="([^"]*)"[^>]*>(.*?)</a>', re.S)


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_check_mark_is_small_and_leads_to_its_own_rule(built_site, lesson):
    """A sentence's check shows as one mark, not its rule's id, and links to the item of
    the list that states that very rule (each {rule} of the source, in order)."""
    path = built_site / "book" / "lessons" / f"{lesson}.html"
    source = (REPO / "book" / "lessons" / f"{lesson}.md").read_text(encoding="utf-8")
    cited = [rule_id.strip() for rule_id in re.findall(r"\{rule\}`([^`]+)`", source)]
    found = RULE_LINK.findall(path.read_text(encoding="utf-8"))
    assert len(found) == len(cited), (lesson, len(found), len(cited))
    for (href, inner), rule_id in zip(found, cited):
        assert re.search(r'class="course-rule-mark">\u2713</span>', inner), inner
        assert re.search(rf'class="course-rule-id">{re.escape(rule_id)}</span>', inner), inner
        target_page, _, anchor = href.partition("#")
        assert anchor == f"rule-{rule_id}", href
        target = resolve(path, target_page) if target_page else path
        assert f'id="{anchor}"' in target.read_text(encoding="utf-8"), (lesson, href)
