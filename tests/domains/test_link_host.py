"""Branded link hosts: `PATCH /domains/{id}` sets `link_host`, its CNAME (to the public URL's
host) joins `records` and is verified with the others; once it verifies, the domain's campaign
mail links through it (clicks, pixel, unsubscribe, preferences, web view, hosted images) and
the host answers only those paths. A failing link-host record leaves mail on the public URL."""

from __future__ import annotations

import re

import pytest

from mailroom.domains.service import NO_PUBLIC_HOST
from tests.domains.conftest import add_domain, publish, read_domain, record, verify
from tests.sending.conftest import driver, sink  # noqa: F401 (fixtures)
from tests.sending.helpers import make_campaign, make_contacts, make_list, ok, send_campaign
from tests.tracking.helpers import hrefs, html_of, path_of, pixel

LINKS = "links.shop.example"
IMAGE = "http://testserver/media/0190aaaa-0000-7000-8000-000000000001"
HTML = (
    f"<html><body><p>Hi</p><img src='{IMAGE}' alt='Sale'>"
    "<p><a href='https://shop.example/sale'>Sale</a></p>"
    "<p><a href='{{ unsubscribe_url }}'>Unsubscribe</a> <a href='{{ preferences_url }}'>"
    "Preferences</a> <a href='{{ webview_url }}'>View online</a></p></body></html>"
)


async def _patch(client, ws, domain_id, body):
    return await client.patch(f"/api/v1/domains/{domain_id}", json=body, headers=ws.headers)


async def test_a_link_host_is_set_listed_and_removed(client, ws, factory, domain_settings):
    domain = await add_domain(client, ws, "shop.example")
    assert domain["link_host"] is None
    assert [r["purpose"] for r in domain["records"]][-1] != "link_host"
    changed = await ok(await _patch(client, ws, domain["id"], {"link_host": "Links.Shop.Example."}))
    assert changed["domain"]["link_host"] == LINKS
    assert record(changed["domain"], "link_host") == {
        "type": "CNAME",
        "host": LINKS,
        "value": "testserver",
        "purpose": "link_host",
        "status": "pending",
        "reason": None,
    }
    assert (await read_domain(client, ws, domain["id"]))["link_host"] == LINKS
    removed = await ok(await _patch(client, ws, domain["id"], {"link_host": None}))
    assert removed["domain"]["link_host"] is None
    assert "link_host" not in [r["purpose"] for r in removed["domain"]["records"]]

    other = await factory.workspace("pro")
    foreign = await _patch(client, other, domain["id"], {"link_host": LINKS})
    assert (foreign.status_code, foreign.json()) == (404, {"error": "Domain not found"})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "link_host must be a hostname, or null to remove it"),
        (7, "link_host must be a hostname, or null to remove it"),
        ("127.0.0.1", "link_host must be a hostname, not an IP address"),
        ("testserver.", "link_host must have at least one dot, like example.com"),
        ("TestServer.Example", None),  # fine
    ],
)
async def test_a_bad_link_host_is_refused_and_nothing_changes(
    client, ws, domain_settings, value, message
):
    domain = await add_domain(client, ws, "shop.example")
    answer = await _patch(client, ws, domain["id"], {"link_host": value})
    if message is None:
        assert answer.status_code == 200
        return
    assert (answer.status_code, answer.json()) == (400, {"error": message})
    assert (await read_domain(client, ws, domain["id"]))["link_host"] is None


async def test_the_installations_own_host_and_unknown_fields_are_refused(
    client, ws, domain_settings
):
    domain_settings.public_url = "https://mail.mailroom.example"
    domain = await add_domain(client, ws, "shop.example")
    own = await _patch(client, ws, domain["id"], {"link_host": "mail.mailroom.example"})
    assert (own.status_code, own.json()) == (
        400,
        {"error": "link_host must be a host of your own, not this installation's"},
    )
    domain_settings.public_url = "http://127.0.0.1:8000"  # the default: no host to name
    bare = await _patch(client, ws, domain["id"], {"link_host": "links.shop.example"})
    assert (bare.status_code, bare.json()["error"]) == (422, NO_PUBLIC_HOST)
    unknown = await _patch(client, ws, domain["id"], {"colour": "red"})
    assert (unknown.status_code, unknown.json()) == (400, {"error": "Unknown field(s): colour"})


async def _campaign_mail(client, ws, driver, sink):  # noqa: F811
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["ann@mail.example"], news)
    campaign = await make_campaign(client, ws, news, html_content=HTML)
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()
    return sink.received[-1]


async def test_mail_links_through_a_verified_link_host_which_answers_only_link_paths(
    app,
    client,
    ws,
    zone,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    domain = await add_domain(client, ws, "shop.example")
    await ok(await _patch(client, ws, domain["id"], {"link_host": LINKS}))
    publish(zone, await read_domain(client, ws, domain["id"]))
    checked = await verify(client, ws, domain["id"])
    assert checked["status"] == "verified"
    assert record(checked, "link_host")["status"] == "verified"

    mail = await _campaign_mail(client, ws, driver, sink)
    html = html_of(mail.data)
    links = hrefs(html)
    assert links and all(link.startswith(f"http://{LINKS}/") for link in links), links
    assert pixel(html).startswith(f"http://{LINKS}/o/")
    assert f"http://{LINKS}/media/0190aaaa-0000-7000-8000-000000000001" in html
    assert "testserver" not in html
    unsubscribe = str(mail.parsed()["List-Unsubscribe"])
    assert f"<http://{LINKS}/u/" in unsubscribe

    on_link_host = {"host": LINKS}
    click = next(link for link in links if "/l/" in link)
    answered = await client.get(path_of(click), headers=on_link_host)
    assert (answered.status_code, answered.headers["location"]) == (
        302,
        "https://shop.example/sale",
    )
    page = await client.get(path_of(next(x for x in links if "/u/" in x)), headers=on_link_host)
    assert page.status_code == 200
    for path in ("/api/v1/contacts", "/app/sign-in", "/docs", "/openapi.json", "/"):
        refused = await client.get(path, headers={**on_link_host, **ws.headers})
        assert (refused.status_code, refused.json()) == (404, {"error": "Not found"}), path
    # The installation's own host is untouched.
    assert (await client.get("/api/v1/contacts", headers=ws.headers)).status_code == 200


async def test_a_failing_link_host_record_leaves_links_on_the_public_url(
    client,
    ws,
    zone,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    domain = await add_domain(client, ws, "shop.example")
    await ok(await _patch(client, ws, domain["id"], {"link_host": LINKS}))
    shown = await read_domain(client, ws, domain["id"])
    publish(zone, shown, "dkim", "spf", "dmarc", "return_path")  # not the link host's CNAME
    checked = await verify(client, ws, domain["id"])
    assert checked["status"] == "verified"
    assert record(checked, "link_host")["status"] == "failed"
    assert record(checked, "link_host")["reason"] == f"{LINKS} does not exist in DNS"

    mail = await _campaign_mail(client, ws, driver, sink)
    links = hrefs(html_of(mail.data))
    assert links and all(link.startswith("http://testserver/") for link in links)
    assert not re.search(LINKS, mail.data.decode("latin-1"))


async def test_a_proxy_may_ask_which_hosts_need_a_certificate(client, ws, domain_settings):
    domain = await add_domain(client, ws, "shop.example")
    assert (await client.get(f"/tls/allowed?domain={LINKS}")).status_code == 404
    await ok(await _patch(client, ws, domain["id"], {"link_host": LINKS}))
    assert (await client.get(f"/tls/allowed?domain={LINKS}")).status_code == 200
    assert (await client.get("/tls/allowed?domain=other.example")).status_code == 404
    assert (await client.get("/tls/allowed")).status_code == 404
