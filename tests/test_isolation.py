"""Spec, "What the service does" and Errors: a key can never read or write another workspace;
cross-workspace ids are 404 (never data, never a change), listings never show another
workspace's rows.

`CASES` is the table of every `/api/v1` route that takes an id. `test_every_id_route_is_covered`
reads the routes from /openapi.json, so a new route without a row here fails the suite.
Placeholders in a case's path and body: `{a_contact}`, `{a_tag}`, `{a_list}`, `{a_key}` (rows of
the victim workspace A) and `{b_contact}`, `{b_tag}`, `{b_list}` (rows of the caller's own
workspace B).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import func, select

from mailroom.models import Event
from tests.rss.static_feed import feed_url


@dataclass(frozen=True)
class Case:
    label: str
    method: str
    route: str  # the OpenAPI path template the case exercises
    path: str
    error: str
    body: Any = None


C, T, L, K = "Contact not found", "Tag not found", "List not found", "Custom field not found"
W = "Webhook not found"
M = "Image not found"
TP, SG, D = "Template not found", "Segment not found", "Domain not found"
CP, MS = "Campaign not found", "Message not found"
AU = "Automation not found"
AS = "Assistant not found"
FO = "Form not found"
ST = "Store not found"
SHOP = "/api/v1/ecommerce/stores/"
FEED = "/api/v1/rss-feeds/"
FD = "Feed not found"
PIXEL = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
    b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N"
    b"\x00\x00\x00\x00IEND\xaeB`\x82"
)

CASES = [
    # contacts
    Case("get-contact", "GET", "/api/v1/contacts/{id}", "/api/v1/contacts/{a_contact}", C),
    Case(
        "patch-contact",
        "PATCH",
        "/api/v1/contacts/{id}",
        "/api/v1/contacts/{a_contact}",
        C,
        {"first_name": "Hacked", "status": "unsubscribed"},
    ),
    Case("delete-contact", "DELETE", "/api/v1/contacts/{id}", "/api/v1/contacts/{a_contact}", C),
    Case(
        "erase-contact",
        "DELETE",
        "/api/v1/contacts/{id}",
        "/api/v1/contacts/{a_contact}?mode=erase",
        C,
    ),
    # tags on a contact
    Case(
        "get-contact-tags",
        "GET",
        "/api/v1/contacts/{id}/tags",
        "/api/v1/contacts/{a_contact}/tags",
        C,
    ),
    Case(
        "tag-foreign-contact-with-own-tag",
        "POST",
        "/api/v1/contacts/{id}/tags",
        "/api/v1/contacts/{a_contact}/tags",
        C,
        {"tag_id": "{b_tag}"},
    ),
    Case(
        "tag-foreign-contact-with-foreign-tag",
        "POST",
        "/api/v1/contacts/{id}/tags",
        "/api/v1/contacts/{a_contact}/tags",
        C,
        {"tag_id": "{a_tag}"},
    ),
    Case(
        "tag-own-contact-with-foreign-tag",
        "POST",
        "/api/v1/contacts/{id}/tags",
        "/api/v1/contacts/{b_contact}/tags",
        T,
        {"tag_id": "{a_tag}"},
    ),
    Case(
        "untag-foreign-contact-foreign-tag",
        "DELETE",
        "/api/v1/contacts/{id}/tags/{tagId}",
        "/api/v1/contacts/{a_contact}/tags/{a_tag}",
        C,
    ),
    Case(
        "untag-foreign-contact-own-tag",
        "DELETE",
        "/api/v1/contacts/{id}/tags/{tagId}",
        "/api/v1/contacts/{a_contact}/tags/{b_tag}",
        C,
    ),
    Case(
        "untag-own-contact-foreign-tag",
        "DELETE",
        "/api/v1/contacts/{id}/tags/{tagId}",
        "/api/v1/contacts/{b_contact}/tags/{a_tag}",
        T,
    ),
    # tags
    Case("get-tag", "GET", "/api/v1/tags/{id}", "/api/v1/tags/{a_tag}", T),
    Case(
        "patch-tag",
        "PATCH",
        "/api/v1/tags/{id}",
        "/api/v1/tags/{a_tag}",
        T,
        {"name": "Hacked", "color": "#000000"},
    ),
    Case("delete-tag", "DELETE", "/api/v1/tags/{id}", "/api/v1/tags/{a_tag}", T),
    # lists
    Case("get-list", "GET", "/api/v1/lists/{id}", "/api/v1/lists/{a_list}", L),
    Case(
        "patch-list",
        "PATCH",
        "/api/v1/lists/{id}",
        "/api/v1/lists/{a_list}",
        L,
        {"name": "Hacked", "double_opt_in": True},
    ),
    Case("delete-list", "DELETE", "/api/v1/lists/{id}", "/api/v1/lists/{a_list}", L),
    Case(
        "get-list-contacts",
        "GET",
        "/api/v1/lists/{id}/contacts",
        "/api/v1/lists/{a_list}/contacts",
        L,
    ),
    Case(
        "add-own-contact-to-foreign-list",
        "POST",
        "/api/v1/lists/{id}/contacts",
        "/api/v1/lists/{a_list}/contacts",
        L,
        {"contact_ids": ["{b_contact}"]},
    ),
    Case(
        "add-foreign-contact-to-own-list",
        "POST",
        "/api/v1/lists/{id}/contacts",
        "/api/v1/lists/{b_list}/contacts",
        C,
        {"contact_ids": ["{a_contact}"]},
    ),
    Case(
        "remove-foreign-contact-from-foreign-list",
        "DELETE",
        "/api/v1/lists/{id}/contacts/{contact_id}",
        "/api/v1/lists/{a_list}/contacts/{a_contact}",
        L,
    ),
    Case(
        "remove-foreign-contact-from-own-list",
        "DELETE",
        "/api/v1/lists/{id}/contacts/{contact_id}",
        "/api/v1/lists/{b_list}/contacts/{a_contact}",
        C,
    ),
    Case(
        "remove-own-contact-from-foreign-list",
        "DELETE",
        "/api/v1/lists/{id}/contacts/{contact_id}",
        "/api/v1/lists/{a_list}/contacts/{b_contact}",
        L,
    ),
    # custom fields
    Case(
        "patch-custom-field",
        "PATCH",
        "/api/v1/custom-fields/{key}",
        "/api/v1/custom-fields/{a_key}",
        K,
        {"label": "Hacked", "type": "number", "confirm_violations": True},
    ),
    Case(
        "delete-custom-field",
        "DELETE",
        "/api/v1/custom-fields/{key}",
        "/api/v1/custom-fields/{a_key}",
        K,
    ),
    # assistants
    Case("get-assistant", "GET", "/api/v1/assistants/{id}", "/api/v1/assistants/{a_assistant}", AS),
    Case(
        "delete-assistant",
        "DELETE",
        "/api/v1/assistants/{id}",
        "/api/v1/assistants/{a_assistant}",
        AS,
    ),
    # media
    Case("delete-media", "DELETE", "/api/v1/media/{id}", "/api/v1/media/{a_media}", M),
    # webhooks
    Case(
        "patch-webhook",
        "PATCH",
        "/api/v1/webhooks/{id}",
        "/api/v1/webhooks/{a_hook}",
        W,
        {"enabled": False, "description": "Hacked"},
    ),
    Case("delete-webhook", "DELETE", "/api/v1/webhooks/{id}", "/api/v1/webhooks/{a_hook}", W),
    Case(
        "rotate-webhook-secret",
        "POST",
        "/api/v1/webhooks/{id}/rotate-secret",
        "/api/v1/webhooks/{a_hook}/rotate-secret",
        W,
    ),
    Case(
        "webhook-deliveries",
        "GET",
        "/api/v1/webhooks/{id}/deliveries",
        "/api/v1/webhooks/{a_hook}/deliveries",
        W,
    ),
    Case(
        "test-webhook",
        "POST",
        "/api/v1/webhooks/{id}/test",
        "/api/v1/webhooks/{a_hook}/test",
        W,
        {"event": "contact.created"},
    ),
    # templates, segments, sending domains
    Case("get-template", "GET", "/api/v1/templates/{id}", "/api/v1/templates/{a_template}", TP),
    Case(
        "patch-template",
        "PATCH",
        "/api/v1/templates/{id}",
        "/api/v1/templates/{a_template}",
        TP,
        {"name": "Hacked"},
    ),
    Case(
        "delete-template", "DELETE", "/api/v1/templates/{id}", "/api/v1/templates/{a_template}", TP
    ),
    Case(
        "preview-template",
        "POST",
        "/api/v1/templates/{id}/preview",
        "/api/v1/templates/{a_template}/preview",
        TP,
        {},
    ),
    Case(
        "preview-own-template-as-foreign-contact",
        "POST",
        "/api/v1/templates/{id}/preview",
        "/api/v1/templates/{b_template}/preview",
        C,
        {"contact_id": "{a_contact}"},
    ),
    Case("get-segment", "GET", "/api/v1/segments/{id}", "/api/v1/segments/{a_segment}", SG),
    Case(
        "patch-segment",
        "PATCH",
        "/api/v1/segments/{id}",
        "/api/v1/segments/{a_segment}",
        SG,
        {"name": "Hacked"},
    ),
    Case("delete-segment", "DELETE", "/api/v1/segments/{id}", "/api/v1/segments/{a_segment}", SG),
    Case(
        "preview-segment",
        "GET",
        "/api/v1/segments/{id}/preview",
        "/api/v1/segments/{a_segment}/preview",
        SG,
    ),
    Case("get-domain", "GET", "/api/v1/domains/{id}", "/api/v1/domains/{a_domain}", D),
    Case("delete-domain", "DELETE", "/api/v1/domains/{id}", "/api/v1/domains/{a_domain}", D),
    Case(
        "update-domain",
        "PATCH",
        "/api/v1/domains/{id}",
        "/api/v1/domains/{a_domain}",
        D,
        {"link_host": "links.evil.example"},
    ),
    Case(
        "domain-dmarc", "GET", "/api/v1/domains/{id}/dmarc", "/api/v1/domains/{a_domain}/dmarc", D
    ),
    Case(
        "verify-domain",
        "POST",
        "/api/v1/domains/{id}/verify",
        "/api/v1/domains/{a_domain}/verify",
        D,
    ),
    # automations
    Case("get-automation", "GET", "/api/v1/automations/{id}", "/api/v1/automations/{a_auto}", AU),
    Case(
        "patch-automation",
        "PATCH",
        "/api/v1/automations/{id}",
        "/api/v1/automations/{a_auto}",
        AU,
        {"name": "Hacked"},
    ),
    Case(
        "delete-automation",
        "DELETE",
        "/api/v1/automations/{id}",
        "/api/v1/automations/{a_auto}",
        AU,
    ),
    Case(
        "activate-automation",
        "POST",
        "/api/v1/automations/{id}/activate",
        "/api/v1/automations/{a_auto}/activate",
        AU,
    ),
    Case(
        "pause-automation",
        "POST",
        "/api/v1/automations/{id}/pause",
        "/api/v1/automations/{a_auto}/pause",
        AU,
    ),
    Case(
        "enrol-automation",
        "POST",
        "/api/v1/automations/{id}/enrol",
        "/api/v1/automations/{a_auto}/enrol",
        AU,
        {"contact_ids": ["{b_contact}"]},
    ),
    Case(
        "automation-runs",
        "GET",
        "/api/v1/automations/{id}/runs",
        "/api/v1/automations/{a_auto}/runs",
        AU,
    ),
    # signup forms
    Case("get-form", "GET", "/api/v1/forms/{id}", "/api/v1/forms/{a_form}", FO),
    Case(
        "patch-form",
        "PATCH",
        "/api/v1/forms/{id}",
        "/api/v1/forms/{a_form}",
        FO,
        {"name": "Hacked"},
    ),
    Case("delete-form", "DELETE", "/api/v1/forms/{id}", "/api/v1/forms/{a_form}", FO),
    Case("embed-form", "GET", "/api/v1/forms/{id}/embed", "/api/v1/forms/{a_form}/embed", FO),
    # campaigns and transactional mail
    Case("get-campaign", "GET", "/api/v1/campaigns/{id}", "/api/v1/campaigns/{a_campaign}", CP),
    Case(
        "patch-campaign",
        "PATCH",
        "/api/v1/campaigns/{id}",
        "/api/v1/campaigns/{a_campaign}",
        CP,
        {"subject": "Hacked"},
    ),
    Case(
        "delete-campaign", "DELETE", "/api/v1/campaigns/{id}", "/api/v1/campaigns/{a_campaign}", CP
    ),
    Case(
        "send-campaign",
        "POST",
        "/api/v1/campaigns/{id}/send",
        "/api/v1/campaigns/{a_campaign}/send",
        CP,
    ),
    Case(
        "schedule-campaign",
        "POST",
        "/api/v1/campaigns/{id}/schedule",
        "/api/v1/campaigns/{a_campaign}/schedule",
        CP,
        {"send_at": "2099-01-01T00:00:00Z"},
    ),
    Case(
        "cancel-campaign",
        "POST",
        "/api/v1/campaigns/{id}/cancel",
        "/api/v1/campaigns/{a_campaign}/cancel",
        CP,
    ),
    Case(
        "pick-ab-winner",
        "POST",
        "/api/v1/campaigns/{id}/ab-test/winner",
        "/api/v1/campaigns/{a_campaign}/ab-test/winner",
        CP,
        {"variant_id": "a"},
    ),
    Case(
        "duplicate-campaign",
        "POST",
        "/api/v1/campaigns/{id}/duplicate",
        "/api/v1/campaigns/{a_campaign}/duplicate",
        CP,
    ),
    Case(
        "test-campaign",
        "POST",
        "/api/v1/campaigns/{id}/test",
        "/api/v1/campaigns/{a_campaign}/test",
        CP,
        {"emails": ["own@mailtest.io"]},
    ),
    Case(
        "campaign-recipients",
        "GET",
        "/api/v1/campaigns/{id}/recipients",
        "/api/v1/campaigns/{a_campaign}/recipients",
        CP,
    ),
    Case("get-message", "GET", "/api/v1/send/{id}", "/api/v1/send/{a_message}", MS),
    Case(
        "campaign-report",
        "GET",
        "/api/v1/campaigns/{id}/report",
        "/api/v1/campaigns/{a_campaign}/report",
        CP,
    ),
    Case(
        "confirm-foreign-contact-on-foreign-list",
        "POST",
        "/api/v1/lists/{id}/contacts/{contact_id}/confirmation",
        "/api/v1/lists/{a_list}/contacts/{a_contact}/confirmation",
        L,
    ),
    Case(
        "confirm-foreign-contact-on-own-list",
        "POST",
        "/api/v1/lists/{id}/contacts/{contact_id}/confirmation",
        "/api/v1/lists/{b_list}/contacts/{a_contact}/confirmation",
        C,
    ),
    # e-commerce: a store and what it holds
    *[
        Case(f"{method.lower()}-{label}", method, SHOP + route, SHOP + path, ST, body)
        for label, method, route, path, body in [
            ("store", "GET", "{id}", "{a_store}", None),
            ("store", "PATCH", "{id}", "{a_store}", {"name": "Hacked"}),
            ("store", "DELETE", "{id}", "{a_store}", None),
            ("deliveries", "GET", "{store_id}/deliveries", "{a_store}/deliveries", None),
            ("products", "GET", "{store_id}/products", "{a_store}/products", None),
            ("product", "GET", "{store_id}/products/{external_id}", "{a_store}/products/p1", None),
            (
                "product",
                "PUT",
                "{store_id}/products/{external_id}",
                "{a_store}/products/p1",
                {"title": "Hacked"},
            ),
            (
                "product",
                "DELETE",
                "{store_id}/products/{external_id}",
                "{a_store}/products/p1",
                None,
            ),
            ("orders", "GET", "{store_id}/orders", "{a_store}/orders", None),
            (
                "orders-batch",
                "POST",
                "{store_id}/orders/batch",
                "{a_store}/orders/batch",
                {"orders": [{"external_id": "o1", "total": "0.00"}]},
            ),
            ("order", "GET", "{store_id}/orders/{external_id}", "{a_store}/orders/o1", None),
            (
                "order",
                "PUT",
                "{store_id}/orders/{external_id}",
                "{a_store}/orders/o1",
                {"total": "0.00", "status": "refunded"},
            ),
            ("order", "DELETE", "{store_id}/orders/{external_id}", "{a_store}/orders/o1", None),
            ("carts", "GET", "{store_id}/carts", "{a_store}/carts", None),
            ("cart", "GET", "{store_id}/carts/{external_id}", "{a_store}/carts/c1", None),
            ("cart", "PUT", "{store_id}/carts/{external_id}", "{a_store}/carts/c1", {"total": 0}),
            ("cart", "DELETE", "{store_id}/carts/{external_id}", "{a_store}/carts/c1", None),
        ]
    ],
    *[
        Case(
            f"{method.lower()}-feed{suffix.replace('/', '-')}",
            method,
            FEED + "{id}" + suffix,
            FEED + "{a_feed}" + suffix,
            FD,
            body,
        )
        for method, suffix, body in [
            ("GET", "", None),
            ("PATCH", "", {"name": "Hacked"}),
            ("DELETE", "", None),
            ("POST", "/check", None),
            ("POST", "/activate", None),
            ("POST", "/pause", None),
            ("POST", "/run", None),
            ("GET", "/issues", None),
        ]
    ],
    Case(
        "get-import",
        "GET",
        "/api/v1/imports/{id}",
        "/api/v1/imports/{a_import}",
        "Import not found",
    ),
    *[
        Case(
            f"{method.lower()}-blueprint{suffix.replace('/', '-')}",
            method,
            "/api/v1/blueprints/{id}" + suffix,
            "/api/v1/blueprints/{a_blueprint}" + suffix,
            "Blueprint not found",
            body,
        )
        for method, suffix, body in [
            ("GET", "", None),
            ("PATCH", "", {"name": "Hacked"}),
            ("DELETE", "", None),
            ("GET", "/document", None),
            ("POST", "/apply", {"dry_run": False}),
        ]
    ],
]


@dataclass
class World:
    a: Any
    b: Any
    ids: dict[str, str]
    secrets: list[str]  # values of A that must never reach B


async def _ok(response, status=200):
    assert response.status_code == status, response.text
    return response.json()


@pytest.fixture
async def world(client, factory, settings) -> World:
    settings.webhook_allow_networks = ["127.0.0.0/8"]  # A's RSS feed is served on 127.0.0.1
    a = await factory.workspace("pro", name="Victim")
    b = await factory.workspace("pro", name="Intruder")
    a_contact = (
        await _ok(
            await client.post(
                "/api/v1/contacts",
                json={
                    "email": "victim@mailtest.io",
                    "first_name": "Vicky",
                    "custom_fields": {"plan": "gold"},
                },
                headers=a.headers,
            ),
            201,
        )
    )["contact"]
    a_tag = (
        await _ok(
            await client.post("/api/v1/tags", json={"name": "Secret VIP"}, headers=a.headers), 201
        )
    )["tag"]
    a_list = (
        await _ok(
            await client.post("/api/v1/lists", json={"name": "Secret list"}, headers=a.headers),
            201,
        )
    )["list"]
    await _ok(
        await client.post(
            f"/api/v1/contacts/{a_contact['id']}/tags",
            json={"tag_id": a_tag["id"]},
            headers=a.headers,
        ),
        201,
    )
    await _ok(
        await client.post(
            f"/api/v1/lists/{a_list['id']}/contacts",
            json={"contact_ids": [a_contact["id"]]},
            headers=a.headers,
        )
    )
    b_contact = (
        await _ok(
            await client.post(
                "/api/v1/contacts", json={"email": "own@mailtest.io"}, headers=b.headers
            ),
            201,
        )
    )["contact"]
    b_tag = (
        await _ok(await client.post("/api/v1/tags", json={"name": "Own"}, headers=b.headers), 201)
    )["tag"]
    b_list = (
        await _ok(
            await client.post("/api/v1/lists", json={"name": "Own list"}, headers=b.headers), 201
        )
    )["list"]
    await _ok(
        await client.post(
            f"/api/v1/contacts/{b_contact['id']}/tags",
            json={"tag_id": b_tag["id"]},
            headers=b.headers,
        ),
        201,
    )
    a_hook = (await _ok(await client.get("/api/v1/webhooks", headers=a.headers)))["webhooks"][0]
    a_media = (
        await _ok(
            await client.post(
                "/api/v1/media",
                files={"file": ("secret.png", PIXEL, "image/png")},
                headers=a.headers,
            ),
            201,
        )
    )["file"]
    a_template = (
        await _ok(
            await client.post(
                "/api/v1/templates",
                json={"name": "Secret template", "subject": "Secret subject", "html_content": "x"},
                headers=a.headers,
            ),
            201,
        )
    )["template"]
    b_template = (
        await _ok(
            await client.post("/api/v1/templates", json={"name": "Own"}, headers=b.headers), 201
        )
    )["template"]
    a_segment = (
        await _ok(
            await client.post(
                "/api/v1/segments",
                json={
                    "name": "Secret segment",
                    "rules": {
                        "match": "all",
                        "conditions": [{"field": "tags", "op": "has_any", "value": [a_tag["id"]]}],
                    },
                },
                headers=a.headers,
            ),
            201,
        )
    )["segment"]
    a_domain = (
        await _ok(
            await client.post(
                "/api/v1/domains", json={"domain": "secret-shop.example"}, headers=a.headers
            ),
            201,
        )
    )["domain"]
    a_campaign = (
        await _ok(
            await client.post(
                "/api/v1/campaigns",
                json={
                    "name": "Secret campaign",
                    "subject": "Secret subject",
                    "from_email": "news@secret-shop.example",
                    "html_content": "<p>Secret</p>",
                    "audience": {"list_ids": [a_list["id"]]},
                },
                headers=a.headers,
            ),
            201,
        )
    )["campaign"]
    await _ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "news@secret-shop.example"}, headers=a.headers
        )
    )
    a_message = (
        await _ok(
            await client.post(
                "/api/v1/send",
                json={"contact_id": a_contact["id"], "subject": "Secret", "text_content": "x"},
                headers=a.headers,
            ),
            202,
        )
    )["message"]
    automation = {
        "trigger": {"type": "manual"},
        "steps": [{"type": "wait", "seconds": 60}],
    }
    a_auto = (
        await _ok(
            await client.post(
                "/api/v1/automations",
                json={"name": "Secret flow", **automation},
                headers=a.headers,
            ),
            201,
        )
    )["automation"]
    b_auto = (
        await _ok(
            await client.post(
                "/api/v1/automations", json={"name": "Own flow", **automation}, headers=b.headers
            ),
            201,
        )
    )["automation"]
    await _ok(await client.post(f"/api/v1/automations/{b_auto['id']}/activate", headers=b.headers))
    a_form = (
        await _ok(
            await client.post(
                "/api/v1/forms", json={"name": "Secret form", "list_ids": []}, headers=a.headers
            ),
            201,
        )
    )["form"]
    grant = await _ok(
        await client.post(
            "/api/v1/assistants/grants",
            json={"name": "Secret agent", "permissions": ["contacts:read"]},
            headers=a.headers,
        ),
        201,
    )
    a_assistant = await _ok(
        await client.post(
            "/api/v1/assistants/grants/exchange", json={"grant": grant["grant"]["code"]}
        )
    )
    a_store = (
        await _ok(
            await client.post(
                "/api/v1/ecommerce/stores",
                json={"name": "Secret shop", "currency": "EUR"},
                headers=a.headers,
            ),
            201,
        )
    )["store"]
    shop = f"/api/v1/ecommerce/stores/{a_store['id']}"
    await _ok(
        await client.put(f"{shop}/products/p1", json={"title": "Pen"}, headers=a.headers), 201
    )
    order = {"total": "9.99", "email": "victim@mailtest.io", "cart_id": "c1"}
    await _ok(await client.put(f"{shop}/carts/c1", json={"total": "9.99"}, headers=a.headers), 201)
    await _ok(await client.put(f"{shop}/orders/o1", json=order, headers=a.headers), 201)
    a_feed = (
        await _ok(
            await client.post(
                "/api/v1/rss-feeds",
                json={"name": "Secret feed", "url": feed_url(), "template_id": a_template["id"]},
                headers=a.headers,
            ),
            201,
        )
    )["rss_feed"]
    a_import = (
        await _ok(
            await client.post(
                "/api/v1/imports",
                data={"platform": "listmonk"},
                files={"file": ("s.csv", b"email,name\nvictim@mailtest.io,Secret Name\n")},
                headers=a.headers,
            ),
            202,
        )
    )["import"]
    a_blueprint = (
        await _ok(
            await client.post(
                "/api/v1/blueprints",
                json={"name": "Secret set-up", "include": ["tags", "lists"]},
                headers=a.headers,
            ),
            201,
        )
    )["blueprint"]
    ids = {
        "a_blueprint": a_blueprint["id"],
        "a_import": a_import["id"],
        "a_feed": a_feed["id"],
        "a_store": a_store["id"],
        "a_assistant": a_assistant["assistant_id"],
        "a_form": a_form["id"],
        "a_auto": a_auto["id"],
        "b_auto": b_auto["id"],
        "a_template": a_template["id"],
        "b_template": b_template["id"],
        "a_segment": a_segment["id"],
        "a_domain": a_domain["id"],
        "a_campaign": a_campaign["id"],
        "a_message": a_message["id"],
        "a_hook": a_hook["id"],
        "a_media": a_media["id"],
        "a_contact": a_contact["id"],
        "a_tag": a_tag["id"],
        "a_list": a_list["id"],
        "a_key": "plan",
        "b_contact": b_contact["id"],
        "b_tag": b_tag["id"],
        "b_list": b_list["id"],
    }
    secrets = [a_contact["id"], a_tag["id"], a_list["id"], "victim@mailtest.io", "Vicky", "gold"]
    secrets += ["Secret VIP", "Secret list", a.workspace_id, "whsec_recorder", a_hook["url"]]
    secrets += ["Secret template", "Secret subject", "Secret segment", "secret-shop.example"]
    secrets += ["Secret campaign", a_message["id"], "Secret agent", a_assistant["assistant_id"]]
    secrets += ["Secret shop", a_store["id"], a_store["webhook_secret"]]
    return World(a, b, ids, secrets)


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if value is None:
        return None
    text = json.dumps(value) if not isinstance(value, str) else value
    for name, real in ids.items():
        text = text.replace("{" + name + "}", real)
    return json.loads(text) if not isinstance(value, str) else text


async def _state(client, db, world: World) -> dict[str, Any]:
    """Everything A's own key can see about A's rows, plus both workspaces' event counts."""
    a, ids = world.a.headers, world.ids
    reads = {
        "contact": f"/api/v1/contacts/{ids['a_contact']}",
        "contact_tags": f"/api/v1/contacts/{ids['a_contact']}/tags",
        "tag": f"/api/v1/tags/{ids['a_tag']}",
        "list": f"/api/v1/lists/{ids['a_list']}",
        "members": f"/api/v1/lists/{ids['a_list']}/contacts",
        "fields": "/api/v1/custom-fields",
        "contacts": "/api/v1/contacts",
        "tags": "/api/v1/tags",
        "lists": "/api/v1/lists",
        "webhooks": "/api/v1/webhooks",
        "hook_deliveries": f"/api/v1/webhooks/{ids['a_hook']}/deliveries",
        "media": "/api/v1/media",
        "template": f"/api/v1/templates/{ids['a_template']}",
        "segment": f"/api/v1/segments/{ids['a_segment']}",
        "segment_preview": f"/api/v1/segments/{ids['a_segment']}/preview",
        "domain": f"/api/v1/domains/{ids['a_domain']}",
        "domain_dmarc": f"/api/v1/domains/{ids['a_domain']}/dmarc",
        "campaign": f"/api/v1/campaigns/{ids['a_campaign']}",
        "automation": f"/api/v1/automations/{ids['a_auto']}",
        "automation_runs": f"/api/v1/automations/{ids['a_auto']}/runs",
        "recipients": f"/api/v1/campaigns/{ids['a_campaign']}/recipients",
        "message": f"/api/v1/send/{ids['a_message']}",
        "sending": "/api/v1/sending",
        "templates": "/api/v1/templates",
        "segments": "/api/v1/segments",
        "domains": "/api/v1/domains",
        "campaigns": "/api/v1/campaigns",
        "assistant": f"/api/v1/assistants/{ids['a_assistant']}",
        "assistants": "/api/v1/assistants",
        "feed": f"/api/v1/rss-feeds/{ids['a_feed']}",
        "import": f"/api/v1/imports/{ids['a_import']}",
        "imports": "/api/v1/imports",
        "blueprint": f"/api/v1/blueprints/{ids['a_blueprint']}",
        "blueprint_document": f"/api/v1/blueprints/{ids['a_blueprint']}/document",
        "blueprints": "/api/v1/blueprints",
        "feed_issues": f"/api/v1/rss-feeds/{ids['a_feed']}/issues",
        "store": f"/api/v1/ecommerce/stores/{ids['a_store']}",
        "store_orders": f"/api/v1/ecommerce/stores/{ids['a_store']}/orders",
        "store_products": f"/api/v1/ecommerce/stores/{ids['a_store']}/products",
        "store_carts": f"/api/v1/ecommerce/stores/{ids['a_store']}/carts",
        "store_deliveries": f"/api/v1/ecommerce/stores/{ids['a_store']}/deliveries",
    }
    state: dict[str, Any] = {}
    for name, path in reads.items():
        response = await client.get(path, headers=a)
        state[name] = (response.status_code, response.json())
    b_members = await client.get(f"/api/v1/lists/{ids['b_list']}/contacts", headers=world.b.headers)
    state["b_members"] = b_members.json()["pagination"]["total"]
    async with db.session() as session:
        for key, ws in (("a_events", world.a), ("b_events", world.b)):
            state[key] = await session.scalar(
                select(func.count()).select_from(Event).where(Event.workspace_id == ws.workspace_id)
            )
    return state


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
async def test_foreign_id_is_404_without_data_or_change(client, db, world, case):
    before = await _state(client, db, world)
    assert all(status == 200 for status, _ in (v for v in before.values() if isinstance(v, tuple)))

    response = await client.request(
        case.method,
        _fill(case.path, world.ids),
        json=_fill(case.body, world.ids),
        headers=world.b.headers,
    )
    assert response.status_code == 404, response.text
    assert response.json() == {"error": case.error}
    for secret in world.secrets:
        assert secret not in response.text

    assert await _state(client, db, world) == before


async def test_every_id_route_is_covered(client):
    doc = (await client.get("/openapi.json")).json()
    routes = {
        (method.upper(), path)
        for path, operations in doc["paths"].items()
        if path.startswith("/api/v1/") and "{" in path
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }
    covered = {(c.method, c.route) for c in CASES}
    assert routes - covered == set(), "routes with an id but no isolation case"
    assert covered - routes == set(), "isolation cases for routes that no longer exist"


async def test_listings_never_show_another_workspace(client, world):
    b, ids = world.b.headers, world.ids

    async def get(path, **params):
        response = await client.get(path, params=params, headers=b)
        assert response.status_code == 200, (path, params, response.text)
        for secret in world.secrets:
            assert secret not in response.text, (path, params, secret)
        return response.json()

    contacts = await get("/api/v1/contacts")
    assert [c["id"] for c in contacts["contacts"]] == [ids["b_contact"]]
    assert contacts["pagination"]["total"] == 1
    assert (await get("/api/v1/contacts", q="victim"))["contacts"] == []
    assert (await get("/api/v1/contacts", tag=ids["a_tag"]))["contacts"] == []
    assert (await get("/api/v1/contacts", list=ids["a_list"]))["contacts"] == []
    assert (await get("/api/v1/contacts", list=ids["a_list"], tag=ids["a_tag"]))["contacts"] == []
    assert [c["id"] for c in (await get("/api/v1/contacts", tag=ids["b_tag"]))["contacts"]] == [
        ids["b_contact"]
    ]

    assert (await get("/api/v1/assistants"))["assistants"] == []

    tags = await get("/api/v1/tags")
    assert [t["id"] for t in tags["tags"]] == [ids["b_tag"]]
    assert tags["tags"][0]["contact_count"] == 1
    assert (await get("/api/v1/tags", q="secret"))["tags"] == []

    lists = await get("/api/v1/lists")
    assert [row["id"] for row in lists["lists"]] == [ids["b_list"]]
    assert lists["pagination"]["total"] == 1

    fields = await get("/api/v1/custom-fields")
    assert [f["key"] for f in fields["fields"]] == []
    assert fields["unregistered"] == [] and fields["unaddressable"] == []

    own_tags = await get(f"/api/v1/contacts/{ids['b_contact']}/tags")
    assert [t["id"] for t in own_tags["tags"]] == [ids["b_tag"]]
    assert (await get(f"/api/v1/lists/{ids['b_list']}/contacts"))["contacts"] == []


async def test_mixed_ids_only_touch_own_rows(client, db, world):
    b, ids = world.b.headers, world.ids
    response = await client.post(
        f"/api/v1/lists/{ids['b_list']}/contacts",
        json={"contact_ids": [ids["a_contact"], ids["b_contact"]]},
        headers=b,
    )
    assert response.status_code == 200
    assert response.json()["added"] == 1
    for secret in world.secrets:
        assert secret not in response.text
    members = (await client.get(f"/api/v1/lists/{ids['b_list']}/contacts", headers=b)).json()
    assert [c["id"] for c in members["contacts"]] == [ids["b_contact"]]
    async with db.session() as session:
        joined = (
            await session.scalars(select(Event).where(Event.type == "contact.list_joined"))
        ).all()
    # A's own join (setup) plus B's own contact; nothing about A's contact in B.
    assert sorted((e.workspace_id, e.data["contact"]["id"]) for e in joined) == sorted(
        [(world.a.workspace_id, ids["a_contact"]), (world.b.workspace_id, ids["b_contact"])]
    )


async def test_names_are_unique_per_workspace_only(client, world):
    b = world.b.headers
    tag = await client.post("/api/v1/tags", json={"name": "secret vip"}, headers=b)
    assert tag.status_code == 201
    lst = await client.post("/api/v1/lists", json={"name": "SECRET LIST"}, headers=b)
    assert lst.status_code == 201
    renamed = await client.patch(
        f"/api/v1/tags/{world.ids['b_tag']}", json={"name": "Secret VIP"}, headers=b
    )
    assert renamed.status_code == 409  # clashes with B's own new tag, not A's
    own = await client.post("/api/v1/contacts", json={"email": "victim@mailtest.io"}, headers=b)
    assert own.status_code == 201
    assert own.json()["contact"]["id"] != world.ids["a_contact"]
    a_tags = (await client.get("/api/v1/tags", headers=world.a.headers)).json()["tags"]
    assert [t["name"] for t in a_tags] == ["Secret VIP"]


async def test_same_custom_field_key_in_both_workspaces_stays_separate(client, world):
    b = world.b.headers
    created = await client.post(
        "/api/v1/custom-fields", json={"key": "plan", "type": "number"}, headers=b
    )
    assert created.status_code == 201, created.text
    deleted = await client.delete("/api/v1/custom-fields/plan", headers=b)
    assert deleted.status_code == 200
    a_fields = (await client.get("/api/v1/custom-fields", headers=world.a.headers)).json()
    assert [(f["key"], f["type"]) for f in a_fields["fields"]] == [("plan", "text")]
    a_contact = (
        await client.get(f"/api/v1/contacts/{world.ids['a_contact']}", headers=world.a.headers)
    ).json()["contact"]
    assert a_contact["custom_fields"] == {"plan": "gold"}
