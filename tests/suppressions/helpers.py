"""Shared helpers for the suppression-list tests (HTTP only)."""

from __future__ import annotations

import csv
import io
from typing import Any

import httpx

API = "/api/v1/suppressions"
CONTACTS = "/api/v1/contacts"


async def add(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    entries: list[Any],
    reason: str | None = None,
) -> httpx.Response:
    body: dict[str, Any] = {"entries": entries}
    if reason is not None:
        body["reason"] = reason
    return await client.post(API, json=body, headers=headers)


async def add_ok(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    entries: list[Any],
    reason: str | None = None,
) -> dict[str, Any]:
    response = await add(client, headers, entries, reason)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def upload(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    content: bytes,
    filename: str = "suppressions.csv",
) -> httpx.Response:
    return await client.post(API, files={"file": (filename, content, "text/csv")}, headers=headers)


async def summary(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    response = await client.get(API, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def lookup(client: httpx.AsyncClient, headers: dict[str, str], email: str) -> dict[str, Any]:
    response = await client.get(API, params={"email": email}, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def listing(
    client: httpx.AsyncClient, headers: dict[str, str], **params: Any
) -> dict[str, Any]:
    response = await client.get(f"{API}/list", params=params, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def rows(
    client: httpx.AsyncClient, headers: dict[str, str], **params: Any
) -> list[dict[str, Any]]:
    params.setdefault("limit", 100)
    return list((await listing(client, headers, **params))["suppressions"])


async def only_row(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    found = await rows(client, headers)
    assert len(found) == 1, found
    return found[0]


async def lift(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> httpx.Response:
    return await client.post(f"{API}/lift", json=body, headers=headers)


async def create_contact(
    client: httpx.AsyncClient, headers: dict[str, str], email: str, **extra: Any
) -> dict[str, Any]:
    response = await client.post(CONTACTS, json={"email": email, **extra}, headers=headers)
    assert response.status_code == 201, response.text
    contact: dict[str, Any] = response.json()["contact"]
    return contact


async def get_contact(
    client: httpx.AsyncClient, headers: dict[str, str], contact_id: str
) -> dict[str, Any]:
    response = await client.get(f"{CONTACTS}/{contact_id}", headers=headers)
    assert response.status_code == 200, response.text
    contact: dict[str, Any] = response.json()["contact"]
    return contact


async def contact_total(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    response = await client.get(CONTACTS, headers=headers)
    assert response.status_code == 200, response.text
    return int(response.json()["pagination"]["total"])


async def export(
    client: httpx.AsyncClient, headers: dict[str, str], **params: Any
) -> httpx.Response:
    return await client.get(f"{API}/export", params=params, headers=headers)


def parse_csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def counts_add_up(result: dict[str, Any]) -> bool:
    return result["received"] == (
        result["added"] + result["upgraded"] + result["unchanged"] + result["invalid"]
    )


def address_of_length(length: int) -> str:
    """A syntactically valid address of exactly `length` characters (local part 64)."""
    local = "a" * 64
    # domain labels of at most 63 characters, ending in `.com`
    remaining = length - len(local) - 1 - len(".com")
    labels = []
    while remaining > 0:
        size = min(63, remaining)
        if remaining - size == 1:  # avoid a leftover that would only fit the dot
            size -= 2
        labels.append("b" * size)
        remaining -= size + 1
    domain = ".".join(labels) + ".com"
    address = f"{local}@{domain}"
    assert len(address) == length, (len(address), length)
    return address
