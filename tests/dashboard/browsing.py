"""What the dashboard's browser tests share: checks every page passes (labels, contrast, no
browser error, screenshots at both widths) and the steps a person repeats (submit a form and
wait for the next page, choose a password from a link, sign in)."""

from __future__ import annotations

from tests.browser import look
from tests.dashboard.helpers import PASSWORD

# Who has focus: a control's id, else its name, else its tag and text.
FOCUSED = """(e => e.id || e.name || `${e.tagName.toLowerCase()}:${e.textContent.trim()}`)(
    document.activeElement)"""
# Controls a person cannot tell apart: no <label>, aria-label or text of their own.
UNLABELLED = """() => [...document.querySelectorAll(
    'input:not([type=hidden]), select, textarea, button')].filter(e =>
    !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
    && !e.getAttribute('aria-labelledby') && !(e.tagName === 'BUTTON' && e.textContent.trim())
).map(e => e.outerHTML)"""
# Visible text under WCAG's contrast minimum (4.5:1, 3:1 for large text), against the first
# opaque background of it or an ancestor.
LOW_CONTRAST = """() => {
  const parse = c => {
    const p = (c.match(/rgba?\\(([^)]+)\\)/) || [, ''])[1].split(/[ ,\\/]+/).filter(Boolean);
    return p.length < 3 ? null : {r: +p[0], g: +p[1], b: +p[2], a: p.length > 3 ? +p[3] : 1};
  };
  const lum = c => ['r', 'g', 'b'].map(k => c[k] / 255)
    .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = el => {
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) return c;
    }
    return {r: 255, g: 255, b: 255, a: 1};
  };
  const found = [], seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const text = walker.currentNode.textContent.trim(), el = walker.currentNode.parentElement;
    if (!text || seen.has(el)) continue;
    seen.add(el);
    const box = el.getBoundingClientRect(), style = getComputedStyle(el);
    if (!box.width || !box.height || box.right < 0 || style.visibility === 'hidden') continue;
    const a = lum(parse(style.color)), b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight) >= 700;
    if (ratio < (size >= 24 || (bold && size >= 18.66) ? 3 : 4.5)) {
      found.push(`${el.tagName.toLowerCase()} "${text.slice(0, 40)}" ${ratio.toFixed(2)}:1`);
    }
  }
  return found;
}"""


async def checked(page, name: str) -> None:
    """Photographed at both widths; labelled, readable, no error in the browser."""
    await look(page, "dashboard", name)
    assert await page.evaluate(UNLABELLED) == [], name
    assert await page.evaluate(LOW_CONTRAST) == [], name
    assert page.errors == [], (name, page.errors)


async def submit(page, button: str):
    """Clicks the button and waits for the page it leads to; its response."""
    async with page.expect_navigation() as navigation:
        await page.get_by_role("button", name=button, exact=True).click()
    return await navigation.value


async def flashes(page) -> list[str]:
    return [t.strip() for t in await page.locator("p.flash").all_inner_texts()]


async def choose_password(page, live_server: str, link: str) -> None:
    answer = await page.goto(live_server + link)
    assert answer.status == 200
    await page.get_by_label("New password").fill(PASSWORD)
    answer = await submit(page, "Save and sign in")
    assert (answer.status, answer.url) == (200, f"{live_server}/app")


async def sign_in(page, email: str, password: str):
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password").fill(password)
    return await submit(page, "Sign in")


async def settled(page) -> None:
    """Until htmx has no request in flight and nothing swapping or settling: an event fired
    on a form in those few milliseconds can be lost with the element it was fired on."""
    await page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
    )


async def relaid(page, path: str, action) -> None:
    """Make a change htmx posts to `path` (`action`, a coroutine such as a select_option) and
    wait until its answer is swapped in and settled: acting sooner races the swap, which
    brings back the form as it was posted, and acting on a form still settling is lost."""
    await settled(page)
    async with page.expect_response(lambda r: path in r.url and r.request.method == "POST"):
        await action
    await settled(page)
