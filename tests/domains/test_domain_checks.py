"""`checks` on a sending domain: Gmail's and Yahoo's bulk-sender rules, each met or not with
what to fix, from the last DNS check, the relay settings and the complaint rate."""

from __future__ import annotations

from types import SimpleNamespace

from mailroom.domains.checks import checks_of
from tests.domains.conftest import BOUNCE_HOST, add_domain, publish, read_domain, verify

RULES = [
    "dkim_aligned",
    "spf_aligned",
    "dmarc_published",
    "one_click_unsubscribe",
    "complaint_rate",
    "tls_to_relay",
    "ehlo_name",
]


def _by_rule(domain: dict) -> dict[str, dict]:
    assert [c["rule"] for c in domain["checks"]] == RULES
    return {c["rule"]: c for c in domain["checks"]}


async def test_a_new_domain_says_what_to_publish_and_a_verified_one_meets_the_rules(
    client, ws, zone, domain_settings
):
    domain_settings.smtp_url = "smtps://relay.example.net"
    domain_settings.smtp_helo = "mail.example.net"
    added = await add_domain(client, ws, "news.acme-mail.com")
    found = _by_rule(added)
    assert found["dkim_aligned"] == {
        "rule": "dkim_aligned",
        "ok": False,
        "detail": "Not checked yet: publish the DKIM record, then verify.",
    }
    assert found["spf_aligned"]["ok"] is False
    assert f"rp.news.acme-mail.com -> {BOUNCE_HOST}" in found["spf_aligned"]["detail"]
    assert found["one_click_unsubscribe"]["ok"] is True
    assert found["complaint_rate"] == {
        "rule": "complaint_rate",
        "ok": True,
        "detail": "Nothing sent in the last 7 days.",
    }
    assert found["tls_to_relay"] == {
        "rule": "tls_to_relay",
        "ok": True,
        "detail": "Every connection to relay.example.net uses TLS.",
    }
    assert found["ehlo_name"]["ok"] is True

    publish(zone, added)
    checked = _by_rule(await verify(client, ws, added["id"]))
    assert {rule: c["ok"] for rule, c in checked.items()} == dict.fromkeys(RULES, True)
    assert checked["spf_aligned"]["detail"] == (
        "Bounces return to rp.news.acme-mail.com, under this domain: SPF aligns."
    )
    listed = await client.get("/api/v1/domains", headers=ws.headers)
    assert listed.json()["domains"][0]["checks"] == [checked[r] for r in RULES]


async def test_the_relay_settings_are_judged(client, ws, settings):
    domain = await add_domain(client, ws, "plain.example.org")
    cases = [
        ("", False, "No relay is configured (MAILROOM_SMTP_URL): mail goes to the outbox folder."),
        (
            "smtp://relay.example.net:587",
            False,
            "TLS to relay.example.net only when it offers STARTTLS: add ?starttls=require to "
            "MAILROOM_SMTP_URL (or use smtps://) to make it a must.",
        ),
        (
            "smtp://relay.example.net:25?starttls=never",
            False,
            "MAILROOM_SMTP_URL says starttls=never: mail to relay.example.net goes unencrypted.",
        ),
        (
            "smtp://relay.example.net:587?starttls=require",
            True,
            "Every connection to relay.example.net uses TLS.",
        ),
    ]
    for url, ok, detail in cases:
        settings.smtp_url = url
        tls = _by_rule(await read_domain(client, ws, domain["id"]))["tls_to_relay"]
        assert (tls["ok"], tls["detail"]) == (ok, detail), url
    settings.smtp_url = "smtp://127.0.0.1:2525"
    assert _by_rule(await read_domain(client, ws, domain["id"]))["tls_to_relay"]["ok"] is True

    settings.smtp_helo = ""
    settings.public_url = "http://127.0.0.1:8000"
    ehlo = _by_rule(await read_domain(client, ws, domain["id"]))["ehlo_name"]
    assert ehlo["ok"] is False and "'[127.0.0.1]'" in ehlo["detail"]
    # No return-path domain: SPF cannot align, and the check says who fixes it.
    spf = _by_rule(await read_domain(client, ws, domain["id"]))["spf_aligned"]
    assert spf["ok"] is False and "MAILROOM_RETURN_PATH_DOMAIN" in spf["detail"]


def test_complaint_rates_against_the_limits(settings):
    domain = SimpleNamespace(domain="shop.example", record_status={})
    shown = {}
    for rate in (0.0005, 0.0015, 0.003, 0.01):
        [found] = [c for c in checks_of(settings, domain, rate) if c["rule"] == "complaint_rate"]
        shown[rate] = (found["ok"], found["detail"])
    assert shown == {
        0.0005: (True, "0.05 % reported as spam (under 0.1 %)."),
        0.0015: (
            True,
            "0.15 % reported as spam: under the 0.3 % limit, over the 0.1 % to aim for.",
        ),
        0.003: (
            False,
            "0.30 % of recent mail was reported as spam: over Gmail's and Yahoo's 0.3 % limit. "
            "Mail only people who asked for it, and make unsubscribing easy.",
        ),
        0.01: (
            False,
            "1.00 % of recent mail was reported as spam: over Gmail's and Yahoo's 0.3 % limit. "
            "Mail only people who asked for it, and make unsubscribing easy.",
        ),
    }


async def test_the_relays_reverse_dns_is_reported_when_known(client, ws, zone, domain_settings):
    domain = await add_domain(client, ws, "news.acme-mail.com")
    publish(zone, domain, "dkim")
    # A relay on this machine: its outbound address is not known, nor its reverse DNS.
    domain_settings.smtp_url = "smtp://127.0.0.1:2525"
    checked = await verify(client, ws, domain["id"])
    assert "reverse_dns" not in [c["rule"] for c in checked["checks"]]

    domain_settings.smtp_url = "smtp://relay.acme-mail.com:587"
    zone.address_of("relay.acme-mail.com", "192.0.2.10")
    zone.reverse("192.0.2.10", "relay.acme-mail.com")
    checked = await verify(client, ws, domain["id"])
    assert checked["checks"][-1] == {
        "rule": "reverse_dns",
        "ok": True,
        "detail": "The relay relay.acme-mail.com (192.0.2.10) reverses to relay.acme-mail.com, "
        "which resolves back to it.",
    }
    assert (await read_domain(client, ws, domain["id"]))["checks"][-1]["ok"] is True

    zone.reverse("192.0.2.10", "host-10.isp.example")  # a generic name that goes nowhere
    found = (await verify(client, ws, domain["id"]))["checks"][-1]
    assert found["rule"] == "reverse_dns" and found["ok"] is False
    assert (
        "reverses to host-10.isp.example, which does not resolve back to 192.0.2.10"
        in (found["detail"])
    )

    zone.remove("10.2.0.192.in-addr.arpa")
    found = (await verify(client, ws, domain["id"]))["checks"][-1]
    assert found["ok"] is False
    assert found["detail"].startswith("The relay relay.acme-mail.com (192.0.2.10) has no reverse")
    # The domain is still verified: reverse DNS is advice, not a record of the domain.
    checked = await read_domain(client, ws, domain["id"])
    assert checked["status"] == "verified"
    assert all(r["purpose"] != "reverse_dns" for r in checked["records"])
