"""Every write route of the API that changes contacts, with the events each request must write
(spec, Events: catalog), and the routes that change no contact."""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from PIL import Image

from tests.events.world import Expected, World
from tests.rss.static_feed import feed_url

A, B, C, D = "a@acme.io", "b@acme.io", "c@acme.io", "d@acme.io"


@dataclass(frozen=True)
class Case:
    route: str  # "METHOD /path" as the app declares it
    label: str
    act: Callable[[World], Awaitable[httpx.Response]]
    expected: list[Expected]
    check: Callable[[World], Awaitable[None]] | None = None  # the stored effect, read back
    prepare: Callable[[World], Awaitable[None]] | None = None  # before the events are marked
    status: int = 200


def _contact(email: str) -> Callable[[World], str]:
    return lambda w: f"/api/v1/contacts/{w.id(email)}"


def patch(email: str, body: dict[str, Any]) -> Callable[[World], Awaitable[httpx.Response]]:
    return lambda w: w.call("PATCH", _contact(email)(w), json=body)


def bulk(action: str, emails: list[str], **more: Any) -> Callable[[World], Awaitable[Any]]:
    async def act(w: World) -> httpx.Response:
        body: dict[str, Any] = {"action": action, "contact_ids": [w.id(e) for e in emails]}
        if "tag" in more:
            body["tag_id"] = w.tags[more["tag"]]
        if "list" in more:
            body["list_id"] = w.lists[more["list"]]
        return await w.call("POST", "/api/v1/contacts/bulk", json=body)

    return act


def status_is(email: str, status: str) -> Callable[[World], Awaitable[None]]:
    async def check(w: World) -> None:
        assert (await w.contact(email))["status"] == status

    return check


def gone(email: str) -> Callable[[World], Awaitable[None]]:
    async def check(w: World) -> None:
        assert (await w.call("GET", _contact(email)(w))).status_code == 404

    return check


def tags_are(email: str, names: set[str]) -> Callable[[World], Awaitable[None]]:
    async def check(w: World) -> None:
        assert {t["name"] for t in (await w.contact(email))["tags"]} == names

    return check


def members_are(name: str, emails: set[str]) -> Callable[[World], Awaitable[None]]:
    async def check(w: World) -> None:
        body = await w.ok("GET", f"/api/v1/lists/{w.lists[name]}/contacts")
        assert {c["email"] for c in body["contacts"]} == emails

    return check


def upload(csv: str, **fields: str) -> Callable[[World], Awaitable[httpx.Response]]:
    return lambda w: w.call(
        "POST",
        "/api/v1/contacts/import",
        files={"file": ("c.csv", csv.encode(), "text/csv")},
        data={k: (w.lists[v] if k == "list_id" else v) for k, v in fields.items()},
    )


async def _archive_a_and_b_then_block_b(w: World) -> None:
    await w.ok(
        "POST",
        "/api/v1/contacts/bulk",
        json={"action": "archive", "contact_ids": [w.id(A), w.id(B)]},
    )
    await w.ok("POST", "/api/v1/suppressions", json={"entries": [B]})


async def _give_a_a_custom_field(w: World) -> None:
    await w.ok("PATCH", _contact(A)(w), json={"custom_fields": {"plan": "gold"}})


async def _import_check(w: World) -> None:
    assert (await w.contact(A))["first_name"] == "Anna"
    assert (await w.contact(B))["status"] == "unsubscribed"
    await members_are("News", {A, "new@acme.io"})(w)


CASES: list[Case] = [
    Case(
        "POST /api/v1/contacts",
        "create",
        lambda w: w.call("POST", "/api/v1/contacts", json={"email": "new@acme.io"}),
        [("contact.created", "new@acme.io", None)],
        status=201,
    ),
    Case(
        "PATCH /api/v1/contacts/{id}",
        "rename",
        patch(A, {"first_name": "Anna"}),
        [("contact.updated", A, None)],
    ),
    Case(
        "PATCH /api/v1/contacts/{id}",
        "unsubscribe",
        patch(A, {"status": "unsubscribed"}),
        [("contact.unsubscribed", A, None)],
        status_is(A, "unsubscribed"),
    ),
    Case(
        "PATCH /api/v1/contacts/{id}",
        "archive",
        patch(B, {"status": "archived"}),
        [("contact.updated", B, None)],
        status_is(B, "archived"),
    ),
    Case(
        "PATCH /api/v1/contacts/{id}",
        "resubscribe",
        patch(C, {"resubscribe": True}),
        [("contact.resubscribed", C, None)],
        status_is(C, "subscribed"),
    ),
    Case(
        "PATCH /api/v1/contacts/{id}",
        "bounce",
        patch(B, {"status": "bounced"}),
        [("contact.bounced", B, None)],
        status_is(B, "bounced"),
    ),
    Case(
        "DELETE /api/v1/contacts/{id}",
        "delete",
        lambda w: w.call("DELETE", _contact(A)(w)),
        [
            ("contact.deleted", A, None),
            ("contact.list_left", A, "News"),
            ("contact.tag_removed", A, "vip"),
        ],
        gone(A),
    ),
    Case(
        "DELETE /api/v1/contacts/{id}",
        "erase",
        lambda w: w.call("DELETE", _contact(A)(w), params={"mode": "erase"}),
        [
            ("contact.deleted", A, None),
            ("contact.list_left", A, "News"),
            ("contact.tag_removed", A, "vip"),
        ],
        gone(A),
    ),
    Case(
        "POST /api/v1/contacts/{id}/tags",
        "attach",
        lambda w: w.call("POST", _contact(B)(w) + "/tags", json={"tag_id": w.tags["vip"]}),
        [("contact.tag_added", B, "vip")],
        tags_are(B, {"vip"}),
        status=201,
    ),
    Case(
        "DELETE /api/v1/contacts/{id}/tags/{tagId}",
        "detach",
        lambda w: w.call("DELETE", _contact(A)(w) + f"/tags/{w.tags['vip']}"),
        [("contact.tag_removed", A, "vip")],
        tags_are(A, set()),
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "unsubscribe",
        bulk("unsubscribe", [A, B, C]),
        [("contact.unsubscribed", A, None), ("contact.unsubscribed", B, None)],
        status_is(B, "unsubscribed"),
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "archive",
        bulk("archive", [A, B]),
        [("contact.updated", A, None), ("contact.updated", B, None)],
        status_is(A, "archived"),
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "restore",
        bulk("restore", [A, B, C]),
        [("contact.updated", A, None), ("contact.unsubscribed", B, None)],
        status_is(B, "unsubscribed"),
        _archive_a_and_b_then_block_b,
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "delete",
        bulk("delete", [A, B]),
        [
            ("contact.deleted", A, None),
            ("contact.deleted", B, None),
            ("contact.list_left", A, "News"),
            ("contact.tag_removed", A, "vip"),
        ],
        gone(B),
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "erase",
        bulk("erase", [D]),
        [("contact.deleted", D, None), ("contact.list_left", D, "Double")],
        gone(D),
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "add_tag",
        bulk("add_tag", [A, B], tag="vip"),
        [("contact.tag_added", B, "vip")],
        tags_are(B, {"vip"}),
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "remove_tag",
        bulk("remove_tag", [A, B], tag="vip"),
        [("contact.tag_removed", A, "vip")],
        tags_are(A, set()),
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "add_to_list",
        bulk("add_to_list", [A, B, C], list="News"),
        [("contact.list_joined", B, "News")],
        members_are("News", {A, B}),
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "add_to_double_list",
        bulk("add_to_list", [B], list="Double"),
        [],
        members_are("Double", {B, D}),
    ),
    Case(
        "POST /api/v1/contacts/bulk",
        "remove_from_list",
        bulk("remove_from_list", [A, B], list="News"),
        [("contact.list_left", A, "News")],
        members_are("News", set()),
    ),
    Case("POST /api/v1/contacts/bulk", "export", bulk("export", [A, B]), []),
    Case(
        "POST /api/v1/contacts/import",
        "new, refreshed, escalated, tagged, joined",
        upload(
            "email,first_name,status\na@acme.io,Anna,\nb@acme.io,,unsubscribed\nnew@acme.io,,\n",
            skip_duplicates="false",
            source="api",
            tags="vip;fresh",
            list_id="News",
        ),
        [
            ("contact.created", "new@acme.io", None),
            ("contact.updated", A, None),  # first name refreshed
            ("contact.unsubscribed", B, None),  # escalated by the file
            ("contact.tag_added", B, "vip"),
            ("contact.tag_added", "new@acme.io", "vip"),
            ("contact.tag_added", A, "fresh"),
            ("contact.tag_added", B, "fresh"),
            ("contact.tag_added", "new@acme.io", "fresh"),
            ("contact.list_joined", "new@acme.io", "News"),  # a was a member; b left subscribed
        ],
        _import_check,
    ),
    Case(
        "POST /api/v1/contacts/import",
        "custom field merged into an existing contact",
        upload("email,plan\na@acme.io,gold\n"),
        [("contact.updated", A, None)],
    ),
    Case(
        "DELETE /api/v1/tags/{id}",
        "tag delete",
        lambda w: w.call("DELETE", f"/api/v1/tags/{w.tags['vip']}"),
        [("contact.tag_removed", A, "vip")],
        tags_are(A, set()),
    ),
    Case(
        "DELETE /api/v1/lists/{id}",
        "list delete",
        lambda w: w.call("DELETE", f"/api/v1/lists/{w.lists['Double']}"),
        [("contact.list_left", D, "Double")],
    ),
    Case(
        "POST /api/v1/lists/{id}/contacts",
        "join",
        lambda w: w.call(
            "POST",
            f"/api/v1/lists/{w.lists['News']}/contacts",
            json={"contact_ids": [w.id(B), w.id(C)]},
        ),
        [("contact.list_joined", B, "News")],
        members_are("News", {A, B}),
    ),
    Case(
        "DELETE /api/v1/lists/{id}/contacts/{contact_id}",
        "leave",
        lambda w: w.call("DELETE", f"/api/v1/lists/{w.lists['News']}/contacts/{w.id(A)}"),
        [("contact.list_left", A, "News")],
        members_are("News", set()),
    ),
    Case(
        "POST /api/v1/suppressions",
        "json",
        lambda w: w.call(
            "POST",
            "/api/v1/suppressions",
            json={"entries": [{"email": A, "reason": "bounced"}, C, B]},
        ),
        [("contact.bounced", A, None), ("contact.unsubscribed", B, None)],
        status_is(A, "bounced"),
    ),
    Case(
        "POST /api/v1/suppressions",
        "csv",
        lambda w: w.call(
            "POST",
            "/api/v1/suppressions",
            files={"file": ("s.csv", b"email,reason\nb@acme.io,spam\n", "text/csv")},
        ),
        [("contact.complained", B, None)],
        status_is(B, "complained"),
    ),
    # Removes the key from every contact carrying it: a field change.
    Case(
        "DELETE /api/v1/custom-fields/{key}",
        "field delete",
        lambda w: w.call("DELETE", "/api/v1/custom-fields/plan"),
        [("contact.updated", A, None)],
        prepare=_give_a_a_custom_field,
    ),
]


# Write routes that change no contact, each with a request that succeeds (and must write no
# contact event).
def _webhook(w: World) -> str:
    return str(w.extra["webhook"])


async def _connect_assistant(w: World) -> None:
    grant = await w.ok(
        "POST",
        "/api/v1/assistants/grants",
        201,
        json={"name": "Agent", "permissions": ["contacts:read"]},
    )
    exchanged = await w.client.post(
        "/api/v1/assistants/grants/exchange", json={"grant": grant["grant"]["code"]}
    )
    assert exchanged.status_code == 200, exchanged.text
    w.extra["assistant"] = exchanged.json()["assistant_id"]
    w.extra["grant"] = grant["grant"]["code"]


async def _make_grant(w: World) -> None:
    grant = await w.ok(
        "POST",
        "/api/v1/assistants/grants",
        201,
        json={"name": "Agent", "permissions": ["contacts:read"]},
    )
    w.extra["grant"] = grant["grant"]["code"]


async def _make_webhook(w: World) -> None:
    made = await w.ok(
        "POST",
        "/api/v1/webhooks",
        201,
        json={"url": "http://127.0.0.1:9/x", "event_types": ["contact.created"]},
    )
    w.extra["webhook"] = made["id"]


async def _make_field(w: World) -> None:
    await w.ok("POST", "/api/v1/custom-fields", 201, json={"key": "plan"})


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


async def _upload_image(w: World) -> None:
    made = await w.ok("POST", "/api/v1/media", 201, files={"file": ("p.png", _png(), "image/png")})
    w.extra["media"] = made["file"]["id"]


async def _delete_a_contact(w: World) -> None:
    made = await w.ok("POST", "/api/v1/contacts", 201, json={"email": "gone@acme.io"})
    await w.ok("DELETE", f"/api/v1/contacts/{made['contact']['id']}")


async def _make_template(w: World) -> None:
    made = await w.ok(
        "POST", "/api/v1/templates", 201, json={"name": "T", "subject": "Hi", "html_content": "x"}
    )
    w.extra["template"] = made["template"]["id"]


async def _make_segment(w: World) -> None:
    rules = {"match": "all", "conditions": [{"field": "email", "op": "contains", "value": "a"}]}
    made = await w.ok("POST", "/api/v1/segments", 201, json={"name": "S", "rules": rules})
    w.extra["segment"] = made["segment"]["id"]


async def _make_automation(w: World) -> None:
    made = await w.ok(
        "POST",
        "/api/v1/automations",
        201,
        json={
            "name": "A",
            "trigger": {"type": "manual"},
            "steps": [{"type": "wait", "seconds": 60}],
        },
    )
    w.extra["automation"] = made["automation"]["id"]


async def _make_live_automation(w: World) -> None:
    await _make_automation(w)
    await w.ok("POST", f"/api/v1/automations/{w.extra['automation']}/activate", 200)


async def _make_form(w: World) -> None:
    made = await w.ok("POST", "/api/v1/forms", 201, json={"name": "F"})
    w.extra["form"] = made["form"]["id"]


async def _make_domain(w: World) -> None:
    made = await w.ok("POST", "/api/v1/domains", 201, json={"domain": "news.acme.io"})
    w.extra["domain"] = made["domain"]["id"]


_RULES = {"match": "all", "conditions": [{"field": "email", "op": "contains", "value": "acme"}]}
CAMPAIGN = {
    "name": "C",
    "subject": "Hi",
    "from_email": "news@acme.io",
    "html_content": "<p>Hello</p>",
}


async def _make_campaign(w: World) -> None:
    body = {**CAMPAIGN, "audience": {"list_ids": [w.lists["News"]]}}
    made = await w.ok("POST", "/api/v1/campaigns", 201, json=body)
    w.extra["campaign"] = made["campaign"]["id"]


async def _send_campaign(w: World) -> None:
    await _make_campaign(w)
    await w.ok("POST", f"/api/v1/campaigns/{w.extra['campaign']}/send", 202)


async def _send_ab_campaign(w: World) -> None:
    """A campaign testing two subjects on half its audience (four contacts more on News, so
    that the test has one recipient per variant), its winner picked by hand."""
    ids = []
    for n in range(4):
        made = await w.ok("POST", "/api/v1/contacts", 201, json={"email": f"ab{n}@acme.io"})
        ids.append(made["contact"]["id"])
    await w.ok(
        "POST",
        f"/api/v1/lists/{w.lists['News']}/contacts",
        json={"contact_ids": ids, "status": "confirmed"},
    )
    test = {"variants": [{"subject": "A"}, {"subject": "B"}], "test_share": 50}
    body = {
        **CAMPAIGN,
        "audience": {"list_ids": [w.lists["News"]]},
        "ab_test": {**test, "winner_by": "manual"},
    }
    made = await w.ok("POST", "/api/v1/campaigns", 201, json=body)
    w.extra["campaign"] = made["campaign"]["id"]
    await w.ok("POST", f"/api/v1/campaigns/{w.extra['campaign']}/send", 202)


def _soon() -> str:
    from datetime import UTC, datetime, timedelta

    return (datetime.now(UTC) + timedelta(days=1)).isoformat()


async def _identity(w: World) -> None:
    await w.ok("PATCH", "/api/v1/sending", json={"from_email": "news@acme.io"})


async def _paused(w: World) -> None:
    await w.ok("POST", "/api/v1/sending/pause")


def _campaign(w: World) -> str:
    return str(w.extra["campaign"])


async def _awaiting_confirmation(w: World) -> None:
    """A on a double opt-in list, unconfirmed, and a sender for the confirmation email."""
    await _identity(w)
    made = await w.ok("POST", "/api/v1/lists", 201, json={"name": "Weekly", "double_opt_in": True})
    w.extra["weekly"] = made["list"]["id"]
    await w.ok(
        "POST", f"/api/v1/lists/{w.extra['weekly']}/contacts", json={"contact_ids": [w.id(A)]}
    )


async def _make_store(w: World) -> None:
    made = await w.ok(
        "POST", "/api/v1/ecommerce/stores", 201, json={"name": "Shop", "currency": "EUR"}
    )
    w.extra["store"] = made["store"]["id"]
    shop = f"/api/v1/ecommerce/stores/{w.extra['store']}"
    await w.ok("PUT", f"{shop}/products/p1", 201, json={"title": "Mug", "price": "9.50"})
    await w.ok("PUT", f"{shop}/orders/o1", 201, json={"email": A, "total": "9.50"})
    await w.ok("PUT", f"{shop}/carts/c1", 201, json={"email": A, "total": "9.50"})


def _shop(w: World) -> str:
    return f"/api/v1/ecommerce/stores/{w.extra['store']}"


async def _make_feed_template(w: World) -> None:
    made = await w.ok(
        "POST", "/api/v1/templates", 201, json={"name": "Feed", "html_content": "<p>x</p>"}
    )
    w.extra["feed_template"] = made["template"]["id"]


def _feed_body(w: World, name: str) -> dict[str, str]:
    return {"name": name, "url": feed_url(), "template_id": w.extra["feed_template"]}


async def _make_feed(w: World) -> None:
    """An RSS feed (of a feed served on 127.0.0.1) with its template."""
    await _make_feed_template(w)
    feed = await w.ok("POST", "/api/v1/rss-feeds", 201, json=_feed_body(w, "Blog"))
    w.extra["feed"] = f"/api/v1/rss-feeds/{feed['rss_feed']['id']}"


async def _active_feed(w: World) -> None:
    await _make_feed(w)
    await w.ok("POST", f"{w.extra['feed']}/activate")


async def _make_blueprint(w: World) -> None:
    made = await w.ok("POST", "/api/v1/blueprints", 201, json={"name": "Set-up"})
    w.extra["blueprint"] = f"/api/v1/blueprints/{made['blueprint']['id']}"


NO_CONTACT_CHANGE: dict[str, tuple[Callable[[World], Awaitable[httpx.Response]], Any]] = {
    "POST /api/v1/tags": (lambda w: w.call("POST", "/api/v1/tags", json={"name": "new"}), None),
    "PATCH /api/v1/tags/{id}": (
        lambda w: w.call("PATCH", f"/api/v1/tags/{w.tags['vip']}", json={"name": "VIP"}),
        None,
    ),
    "POST /api/v1/lists": (lambda w: w.call("POST", "/api/v1/lists", json={"name": "New"}), None),
    "PATCH /api/v1/lists/{id}": (
        lambda w: w.call("PATCH", f"/api/v1/lists/{w.lists['News']}", json={"name": "Old news"}),
        None,
    ),
    # Declaring or retyping a field never rewrites stored values (they are flagged instead).
    "POST /api/v1/custom-fields": (
        lambda w: w.call("POST", "/api/v1/custom-fields", json={"key": "plan"}),
        None,
    ),
    "PATCH /api/v1/custom-fields/{key}": (
        lambda w: w.call("PATCH", "/api/v1/custom-fields/plan", json={"label": "Plan"}),
        _make_field,
    ),
    "POST /api/v1/custom-fields/scan": (
        lambda w: w.call("POST", "/api/v1/custom-fields/scan"),
        _give_a_a_custom_field,
    ),
    # Lifting removes a `deleted` suppression row; no contact carries that address.
    "POST /api/v1/suppressions/lift": (
        lambda w: w.call("POST", "/api/v1/suppressions/lift", json={"email": "gone@acme.io"}),
        _delete_a_contact,
    ),
    "POST /api/v1/webhooks": (
        lambda w: w.call(
            "POST",
            "/api/v1/webhooks",
            json={"url": "http://127.0.0.1:9/y", "event_types": ["contact.created"]},
        ),
        None,
    ),
    "PATCH /api/v1/webhooks/{id}": (
        lambda w: w.call("PATCH", f"/api/v1/webhooks/{_webhook(w)}", json={"description": "x"}),
        _make_webhook,
    ),
    "DELETE /api/v1/webhooks/{id}": (
        lambda w: w.call("DELETE", f"/api/v1/webhooks/{_webhook(w)}"),
        _make_webhook,
    ),
    "POST /api/v1/webhooks/{id}/rotate-secret": (
        lambda w: w.call("POST", f"/api/v1/webhooks/{_webhook(w)}/rotate-secret"),
        _make_webhook,
    ),
    "POST /api/v1/webhooks/{id}/test": (
        lambda w: w.call(
            "POST", f"/api/v1/webhooks/{_webhook(w)}/test", json={"event": "contact.created"}
        ),
        _make_webhook,
    ),
    "POST /api/v1/media": (
        lambda w: w.call("POST", "/api/v1/media", files={"file": ("q.png", _png(), "image/png")}),
        None,
    ),
    "DELETE /api/v1/media/{id}": (
        lambda w: w.call("DELETE", f"/api/v1/media/{w.extra['media']}"),
        _upload_image,
    ),
    # Templates, segments and domains are not contacts.
    "POST /api/v1/templates": (
        lambda w: w.call("POST", "/api/v1/templates", json={"name": "New"}),
        None,
    ),
    "PATCH /api/v1/templates/{id}": (
        lambda w: w.call(
            "PATCH", f"/api/v1/templates/{w.extra['template']}", json={"subject": "Hello"}
        ),
        _make_template,
    ),
    "DELETE /api/v1/templates/{id}": (
        lambda w: w.call("DELETE", f"/api/v1/templates/{w.extra['template']}"),
        _make_template,
    ),
    "POST /api/v1/templates/{id}/preview": (
        lambda w: w.call(
            "POST",
            f"/api/v1/templates/{w.extra['template']}/preview",
            json={"contact_id": w.id("a@acme.io")},
        ),
        _make_template,
    ),
    "POST /api/v1/segments": (
        lambda w: w.call(
            "POST",
            "/api/v1/segments",
            json={"name": "New", "rules": _RULES},
        ),
        None,
    ),
    "POST /api/v1/segments/preview": (
        lambda w: w.call("POST", "/api/v1/segments/preview", json={"rules": _RULES}),
        None,
    ),
    "PATCH /api/v1/segments/{id}": (
        lambda w: w.call("PATCH", f"/api/v1/segments/{w.extra['segment']}", json={"name": "S2"}),
        _make_segment,
    ),
    "DELETE /api/v1/segments/{id}": (
        lambda w: w.call("DELETE", f"/api/v1/segments/{w.extra['segment']}"),
        _make_segment,
    ),
    "POST /api/v1/domains": (
        lambda w: w.call("POST", "/api/v1/domains", json={"domain": "mail.acme.io"}),
        None,
    ),
    "PATCH /api/v1/domains/{id}": (
        lambda w: w.call(
            "PATCH", f"/api/v1/domains/{w.extra['domain']}", json={"link_host": "links.acme.io"}
        ),
        _make_domain,
    ),
    "DELETE /api/v1/domains/{id}": (
        lambda w: w.call("DELETE", f"/api/v1/domains/{w.extra['domain']}"),
        _make_domain,
    ),
    "POST /api/v1/domains/{id}/verify": (
        lambda w: w.call("POST", f"/api/v1/domains/{w.extra['domain']}/verify"),
        _make_domain,
    ),
    # Automations change contacts later, in the worker's runs, never in the request.
    "POST /api/v1/automations": (
        lambda w: w.call(
            "POST", "/api/v1/automations", json={"name": "New", "trigger": {"type": "manual"}}
        ),
        None,
    ),
    "PATCH /api/v1/automations/{id}": (
        lambda w: w.call(
            "PATCH", f"/api/v1/automations/{w.extra['automation']}", json={"name": "B"}
        ),
        _make_automation,
    ),
    "DELETE /api/v1/automations/{id}": (
        lambda w: w.call("DELETE", f"/api/v1/automations/{w.extra['automation']}"),
        _make_automation,
    ),
    "POST /api/v1/automations/{id}/activate": (
        lambda w: w.call("POST", f"/api/v1/automations/{w.extra['automation']}/activate"),
        _make_automation,
    ),
    "POST /api/v1/automations/{id}/pause": (
        lambda w: w.call("POST", f"/api/v1/automations/{w.extra['automation']}/pause"),
        _make_live_automation,
    ),
    "POST /api/v1/automations/{id}/enrol": (
        lambda w: w.call(
            "POST",
            f"/api/v1/automations/{w.extra['automation']}/enrol",
            json={"contact_ids": [w.id("a@acme.io")]},
        ),
        _make_live_automation,
    ),
    # Forms change contacts on public submissions (tests/forms), never in these requests.
    "POST /api/v1/forms": (
        lambda w: w.call("POST", "/api/v1/forms", json={"name": "New"}),
        None,
    ),
    "PATCH /api/v1/forms/{id}": (
        lambda w: w.call("PATCH", f"/api/v1/forms/{w.extra['form']}", json={"name": "B"}),
        _make_form,
    ),
    "DELETE /api/v1/forms/{id}": (
        lambda w: w.call("DELETE", f"/api/v1/forms/{w.extra['form']}"),
        _make_form,
    ),
    # Campaigns and sends change contacts later, in the engine (bounces), never in the request.
    "POST /api/v1/campaigns": (
        lambda w: w.call("POST", "/api/v1/campaigns", json=CAMPAIGN),
        None,
    ),
    "PATCH /api/v1/campaigns/{id}": (
        lambda w: w.call("PATCH", f"/api/v1/campaigns/{_campaign(w)}", json={"subject": "Yo"}),
        _make_campaign,
    ),
    "DELETE /api/v1/campaigns/{id}": (
        lambda w: w.call("DELETE", f"/api/v1/campaigns/{_campaign(w)}"),
        _make_campaign,
    ),
    "POST /api/v1/campaigns/{id}/send": (
        lambda w: w.call("POST", f"/api/v1/campaigns/{_campaign(w)}/send"),
        _make_campaign,
    ),
    "POST /api/v1/campaigns/{id}/schedule": (
        lambda w: w.call(
            "POST", f"/api/v1/campaigns/{_campaign(w)}/schedule", json={"send_at": _soon()}
        ),
        _make_campaign,
    ),
    "POST /api/v1/campaigns/{id}/cancel": (
        lambda w: w.call("POST", f"/api/v1/campaigns/{_campaign(w)}/cancel"),
        _send_campaign,
    ),
    "POST /api/v1/campaigns/{id}/ab-test/winner": (
        lambda w: w.call(
            "POST", f"/api/v1/campaigns/{_campaign(w)}/ab-test/winner", json={"variant_id": "b"}
        ),
        _send_ab_campaign,
    ),
    "POST /api/v1/campaigns/{id}/duplicate": (
        lambda w: w.call("POST", f"/api/v1/campaigns/{_campaign(w)}/duplicate"),
        _make_campaign,
    ),
    "POST /api/v1/campaigns/{id}/test": (
        lambda w: w.call(
            "POST", f"/api/v1/campaigns/{_campaign(w)}/test", json={"emails": ["a@acme.io"]}
        ),
        _make_campaign,
    ),
    "POST /api/v1/send": (
        lambda w: w.call(
            "POST",
            "/api/v1/send",
            json={"to": "a@acme.io", "subject": "Receipt", "text_content": "Thanks"},
        ),
        _identity,
    ),
    "PATCH /api/v1/sending": (
        lambda w: w.call("PATCH", "/api/v1/sending", json={"from_name": "Acme"}),
        None,
    ),
    "POST /api/v1/sending/pause": (lambda w: w.call("POST", "/api/v1/sending/pause"), None),
    # Queues the confirmation email; the membership changes only when the link is followed.
    "POST /api/v1/lists/{id}/contacts/{contact_id}/confirmation": (
        lambda w: w.call(
            "POST", f"/api/v1/lists/{w.extra['weekly']}/contacts/{w.id(A)}/confirmation"
        ),
        _awaiting_confirmation,
    ),
    "POST /api/v1/sending/resume": (lambda w: w.call("POST", "/api/v1/sending/resume"), _paused),
    # Assistants are agents, not contacts.
    "POST /api/v1/assistants/grants": (
        lambda w: w.call(
            "POST",
            "/api/v1/assistants/grants",
            json={"name": "Agent", "permissions": ["contacts:read"]},
        ),
        None,
    ),
    "POST /api/v1/assistants/grants/exchange": (
        lambda w: w.client.post(
            "/api/v1/assistants/grants/exchange", json={"grant": w.extra["grant"]}
        ),
        _make_grant,
    ),
    "DELETE /api/v1/assistants/{id}": (
        lambda w: w.call("DELETE", f"/api/v1/assistants/{w.extra['assistant']}"),
        _connect_assistant,
    ),
    # RSS feeds make campaigns; a feed's own routes change no contact (issue 28).
    "POST /api/v1/rss-feeds": (
        lambda w: w.call("POST", "/api/v1/rss-feeds", json=_feed_body(w, "Other")),
        _make_feed_template,
    ),
    "PATCH /api/v1/rss-feeds/{id}": (
        lambda w: w.call("PATCH", w.extra["feed"], json={"name": "Blog 2"}),
        _make_feed,
    ),
    "DELETE /api/v1/rss-feeds/{id}": (lambda w: w.call("DELETE", w.extra["feed"]), _make_feed),
    "POST /api/v1/rss-feeds/{id}/check": (
        lambda w: w.call("POST", f"{w.extra['feed']}/check"),
        _make_feed,
    ),
    "POST /api/v1/rss-feeds/{id}/activate": (
        lambda w: w.call("POST", f"{w.extra['feed']}/activate"),
        _make_feed,
    ),
    "POST /api/v1/rss-feeds/{id}/pause": (
        lambda w: w.call("POST", f"{w.extra['feed']}/pause"),
        _active_feed,
    ),
    "POST /api/v1/rss-feeds/{id}/run": (
        lambda w: w.call("POST", f"{w.extra['feed']}/run"),
        _active_feed,
    ),
    # An import from another platform (issue 29) only queues a job: the worker writes the
    # contacts and their events (tests/platform_imports/test_import_events.py).
    "POST /api/v1/imports": (
        lambda w: w.call(
            "POST",
            "/api/v1/imports",
            data={"platform": "listmonk"},
            files={"file": ("s.csv", b"email,name,status\nnew@acme.io,New,enabled\n", "text/csv")},
        ),
        None,
    ),
    # Blueprints (issue 30) carry set-up, never contacts: capturing, importing, applying.
    "POST /api/v1/blueprints": (
        lambda w: w.call("POST", "/api/v1/blueprints", json={"name": "Set-up"}),
        None,
    ),
    "POST /api/v1/blueprints/import": (
        lambda w: w.call(
            "POST",
            "/api/v1/blueprints/import",
            json={"mailroom_blueprint": 1, "name": "Tags", "parts": {"tags": [{"name": "New"}]}},
        ),
        None,
    ),
    "PATCH /api/v1/blueprints/{id}": (
        lambda w: w.call("PATCH", w.extra["blueprint"], json={"name": "Renamed"}),
        _make_blueprint,
    ),
    "DELETE /api/v1/blueprints/{id}": (
        lambda w: w.call("DELETE", w.extra["blueprint"]),
        _make_blueprint,
    ),
    "POST /api/v1/blueprints/{id}/apply": (
        lambda w: w.call("POST", f"{w.extra['blueprint']}/apply", json={"dry_run": False}),
        _make_blueprint,
    ),
    "POST /api/v1/ecommerce/stores": (
        lambda w: w.call(
            "POST", "/api/v1/ecommerce/stores", json={"name": "Shop", "currency": "EUR"}
        ),
        None,
    ),
    "PATCH /api/v1/ecommerce/stores/{id}": (
        lambda w: w.call("PATCH", _shop(w), json={"name": "Shop 2"}),
        _make_store,
    ),
    "DELETE /api/v1/ecommerce/stores/{id}": (
        lambda w: w.call("DELETE", _shop(w)),
        _make_store,
    ),
    "PUT /api/v1/ecommerce/stores/{store_id}/products/{external_id}": (
        lambda w: w.call("PUT", f"{_shop(w)}/products/p2", json={"title": "Cup", "price": "5"}),
        _make_store,
    ),
    "DELETE /api/v1/ecommerce/stores/{store_id}/products/{external_id}": (
        lambda w: w.call("DELETE", f"{_shop(w)}/products/p1"),
        _make_store,
    ),
    "PUT /api/v1/ecommerce/stores/{store_id}/orders/{external_id}": (
        lambda w: w.call("PUT", f"{_shop(w)}/orders/o2", json={"email": B, "total": "5.00"}),
        _make_store,
    ),
    "POST /api/v1/ecommerce/stores/{store_id}/orders/batch": (
        lambda w: w.call(
            "POST",
            f"{_shop(w)}/orders/batch",
            json={"orders": [{"external_id": "o3", "email": "new@acme.io", "total": "1.00"}]},
        ),
        _make_store,
    ),
    "DELETE /api/v1/ecommerce/stores/{store_id}/orders/{external_id}": (
        lambda w: w.call("DELETE", f"{_shop(w)}/orders/o1"),
        _make_store,
    ),
    "PUT /api/v1/ecommerce/stores/{store_id}/carts/{external_id}": (
        lambda w: w.call("PUT", f"{_shop(w)}/carts/c2", json={"email": B, "total": "5.00"}),
        _make_store,
    ),
    "DELETE /api/v1/ecommerce/stores/{store_id}/carts/{external_id}": (
        lambda w: w.call("DELETE", f"{_shop(w)}/carts/c1"),
        _make_store,
    ),
}


def body_of(response: httpx.Response) -> Any:
    try:
        return response.json()
    except json.JSONDecodeError:
        return response.text[:200]
