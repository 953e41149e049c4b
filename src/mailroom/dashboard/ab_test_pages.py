"""A/B tests on the campaign pages: the editor's card (up to five variants, what each changes,
the test share, the winner rule and delay; a saved variant previewed at both widths), and the
report's (the variants side by side with the winner and why; while testing, when it decides
and a form to pick the winner by hand). The rules are `campaigns.ab_test`'s; this module
only reads the form into the API's shape and lays the figures out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.campaigns import ab_test as ab_tests
from mailroom.campaigns import actions
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.ecommerce.values import money_shown
from mailroom.people import sessions

router = APIRouter(include_in_schema=False)
PATH = "/app/campaigns"
SLOTS = ab_tests.MAX_VARIANTS
# What a slot of the editor holds, in the order a variant is read (the id is hidden).
SLOT_FIELDS = ("name", *ab_tests.OVERRIDES, "template_id")
TEMPLATE_PARTS = ("subject", "preheader", "html_content", "text_content")  # what one fills
RULES = (
    ("opens", "Best open rate"),
    ("clicks", "Best click rate"),
    ("manual", "I pick the winner"),
)
CHANGE_LABELS = {
    "subject": "Subject",
    "from_name": "From name",
    "preheader": "Preheader",
    "html_content": "HTML",
    "text_content": "Plain text",
}


def _number(raw: Any) -> Any:
    """A typed number as the API takes it; anything else as typed (the API refuses it)."""
    text = str(raw or "").strip()
    return int(text) if text.isascii() and text.isdecimal() and len(text) < 7 else text


def from_form(form: dict[str, Any]) -> dict[str, Any] | None:
    """The editor's test as the API's `ab_test` (None: no test). A slot left empty, or
    marked for removal, is no variant; a field left empty is not changed by its variant."""
    if form.get("ab_on") != "on":
        return None
    variants = []
    for slot in range(SLOTS):
        if form.get(f"ab_{slot}_remove") == "on":
            continue
        given = {name: str(form.get(f"ab_{slot}_{name}") or "") for name in ("id", *SLOT_FIELDS)}
        variant = {name: value for name, value in given.items() if value.strip()}
        was = str(form.get(f"ab_{slot}_template_was") or "")
        if variant.get("template_id") and variant["template_id"] != was:
            # A template just picked fills the content: what the slot showed was the old one's.
            for name in TEMPLATE_PARTS:
                variant.pop(name, None)
        if set(variant) - {"id"}:
            variants.append(variant)
    return {
        "variants": variants,
        "test_share": _number(form.get("ab_test_share")),
        "winner_by": str(form.get("ab_winner_by") or ""),
        "decide_after_minutes": _number(form.get("ab_decide_after_minutes")),
    }


def editor(test: dict[str, Any] | None) -> dict[str, Any]:
    """What the editor's card shows: the test's rules (the defaults without one) and five
    slots, the variants first and the free slots after."""
    shown = test or {}
    variants = list(shown.get("variants") or [])
    if not variants:  # a first test starts from two variants to fill in
        variants = [{"name": "Variant A"}, {"name": "Variant B"}]
    slots = [
        {"id": v.get("id") or "", **{name: v.get(name) or "" for name in SLOT_FIELDS}}
        for v in variants[:SLOTS]
    ]
    used = len(slots)
    slots += [{"id": "", **dict.fromkeys(SLOT_FIELDS, "")} for _ in range(SLOTS - used)]
    return {
        "on": test is not None,
        "used": used,
        "slots": slots,
        "test_share": shown.get("test_share", ab_tests.DEFAULTS["test_share"]),
        "winner_by": shown.get("winner_by", ab_tests.DEFAULTS["winner_by"]),
        "decide_after_minutes": shown.get(
            "decide_after_minutes", ab_tests.DEFAULTS["decide_after_minutes"]
        ),
        "rules": RULES,
        "saved": [v for v in (test or {}).get("variants") or [] if v.get("id")],
    }


def _changes(variant: dict[str, Any]) -> str:
    """What a variant changes, in words: `Subject “Hi”, HTML`."""
    parts = []
    for key, label in CHANGE_LABELS.items():
        value = variant.get(key)
        if value is None:
            continue
        short = " ".join(str(value).split())
        parts.append(f"{label} “{short[:60]}”" if key in ("subject", "from_name") else label)
    return ", ".join(parts)


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f} %"


def report(campaign: dict[str, Any], found: dict[str, Any]) -> dict[str, Any] | None:
    """The report's card: each variant's figures beside the others, the winner and why;
    while testing, when it decides (None without a test)."""
    test = campaign.get("ab_test")
    if not test or not found.get("variants"):
        return None
    changes = {v["id"]: _changes(v) for v in test["variants"]}
    winner = found.get("winner") or {}
    rows = []
    for variant in found["variants"]:
        money = variant["revenue"]
        rows.append(
            {
                **variant,
                "changes": changes.get(variant["id"], ""),
                "open_rate": _percent(variant["rates"]["open"]),
                "click_rate": _percent(variant["rates"]["click"]),
                "revenue_text": money_shown(money["total"], money["currency"])
                if money["currency"]
                else None,
                "won": variant["id"] == winner.get("variant_id"),
            }
        )
    decides = test.get("decides_at")
    decides_at = datetime.fromisoformat(decides.replace("Z", "+00:00")) if decides else None
    return {
        "status": test.get("status"),
        "testing": test.get("status") == "testing" and campaign["status"] == "sending",
        "winner_by": test["winner_by"],
        "test_share": test["test_share"],
        "decides": when(decides_at) if test["winner_by"] != "manual" else None,
        "rows": rows,
        "winner": winner or None,
        "winner_name": next((r["name"] for r in rows if r["won"]), None),
        "decided": when(datetime.fromisoformat(winner["decided_at"].replace("Z", "+00:00")))
        if winner
        else None,
        "with_revenue": any(r["revenue_text"] for r in rows),
    }


@router.post(f"{PATH}/{{campaign_id}}/ab-test/winner")
async def pick_winner(campaign_id: str, request: Request) -> Response:
    """A person picks the winner (a manual test, or early): the API's action."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        here = f"{PATH}/{campaign_id}"
        try:
            campaign = await actions.pick_winner(ctx, campaign_id, form.get("variant_id"))
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return RedirectResponse(here, status_code=303)
        audit_write(ctx, request, "pick_ab_winner", campaign_id, 200)
        name = ab_tests.variant_of(campaign.ab_test, str(form.get("variant_id")))["name"]
        sessions.flash(visitor.row, "ok", f"“{name}” won: it goes to the rest of the audience.")
        return RedirectResponse(here, status_code=303)

    # Issue 32: an admin (or a key with campaigns:send) picks a test's winner.
    return await as_visitor(request, work, admin=True)


def preview_parts(test: dict[str, Any] | None, variant_id: str, parts: dict[str, str]) -> None:
    """The campaign's content with a variant's overrides, for its preview frame."""
    variant = ab_tests.variant_of(test, variant_id)
    for name in parts:
        if variant.get(name) is not None:
            parts[name] = variant[name]
