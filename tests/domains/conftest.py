"""Fixtures of the sending-domain tests: a DNS server on 127.0.0.1 that the service asks
(MAILROOM_DNS_NAMESERVERS), settings for the advised records, and API shortcuts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from mailroom.models import Event
from tests.domains.dns_zone import DnsZone
from tests.webhooks.helpers import Driver, Receiver

SPF_INCLUDE = "_spf.relay.mailroom.test"
BOUNCE_HOST = "bounces.mailroom.test"


@pytest.fixture
def domain_settings(settings: Any) -> Any:
    settings.spf_include = SPF_INCLUDE
    settings.return_path_domain = BOUNCE_HOST
    settings.return_path_subdomain = "rp"
    settings.dmarc_policy = "quarantine"
    return settings


@pytest.fixture
async def zone(domain_settings: Any) -> AsyncIterator[DnsZone]:
    async with DnsZone() as server:
        domain_settings.dns_nameservers = [server.address]
        yield server


async def add_domain(client: Any, ws: Any, name: str) -> dict[str, Any]:
    response = await client.post("/api/v1/domains", json={"domain": name}, headers=ws.headers)
    assert response.status_code == 201, response.text
    return response.json()["domain"]


async def read_domain(client: Any, ws: Any, domain_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/v1/domains/{domain_id}", headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()["domain"]


async def verify(client: Any, ws: Any, domain_id: str) -> dict[str, Any]:
    response = await client.post(f"/api/v1/domains/{domain_id}/verify", headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()["domain"]


def record(domain: dict[str, Any], purpose: str) -> dict[str, Any]:
    [found] = [r for r in domain["records"] if r["purpose"] == purpose]
    return found


def publish(zone: DnsZone, domain: dict[str, Any], *purposes: str) -> None:
    """Publish the domain's records as the API lists them (all, or the named purposes)."""
    for item in domain["records"]:
        if purposes and item["purpose"] not in purposes:
            continue
        if item["type"] == "CNAME":
            zone.cname(item["host"], item["value"])
        else:
            zone.txt(item["host"], item["value"])


async def events_of(db: Any, workspace_id: str, *types: str) -> list[Event]:
    async with db.session() as session:
        query = select(Event).where(Event.workspace_id == workspace_id)
        if types:
            query = query.where(Event.type.in_(types))
        return list((await session.scalars(query.order_by(Event.created_at, Event.id))).all())


@pytest.fixture
def hook_settings(domain_settings: Any) -> Any:
    """Webhook deliveries may reach the test receiver on 127.0.0.1, quickly."""
    domain_settings.webhook_allow_networks = ["127.0.0.0/8"]
    domain_settings.webhook_retry_delays = [0, 0, 0, 0]
    domain_settings.webhook_timeout = 3.0  # as tests/webhooks: room for a loaded CI machine
    return domain_settings


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as r:
        yield r


@pytest.fixture
async def driver(db: Any, hook_settings: Any) -> AsyncIterator[Driver]:
    d = Driver(db, hook_settings)
    yield d
    await d.close()
