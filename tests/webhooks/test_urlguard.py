"""The URL guard (mailroom.core.urlguard) as a table, with an injected resolver."""

from __future__ import annotations

import ipaddress

import pytest

from mailroom.core import urlguard

NONE_ALLOWED: list = []
LOOPBACK_ALLOWED = urlguard.parse_networks(["127.0.0.0/8"])

REFUSED_ADDRESSES = [
    ("10.0.0.1", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.254", "private"),
    ("192.168.1.1", "private"),
    ("100.64.0.1", "shared address space (CGNAT)"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("169.254.169.254", "link-local (cloud metadata)"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "this network"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("192.0.2.10", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("::1", "IPv6 loopback"),
    ("::", "IPv6 unspecified"),
    ("fe80::1", "IPv6 link-local"),
    ("fc00::1", "unique-local"),
    ("fd12:3456::1", "unique-local"),
    ("fec0::1", "site-local"),
    ("ff02::1", "IPv6 multicast"),
    ("2001:db8::1", "IPv6 documentation"),
    ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
    ("::ffff:10.0.0.1", "IPv4-mapped private"),
    ("::ffff:169.254.169.254", "IPv4-mapped link-local"),
    ("::127.0.0.1", "IPv4-compatible loopback"),
    ("2002:7f00:1::", "6to4 of 127.0.0.1"),
    ("2002:a00:1::1", "6to4 of 10.0.0.1"),
    ("2002:a9fe:a9fe::", "6to4 of 169.254.169.254"),
    ("2001:0:4136:e378:8000:0:80ff:fffe", "Teredo client 127.0.0.1"),
    ("2001:0:4136:e378:8000:0:f5ff:fffe", "Teredo client 10.0.0.1"),
    ("64:ff9b::7f00:1", "NAT64 of 127.0.0.1"),
    ("64:ff9b::a00:1", "NAT64 of 10.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254"),
    ("64:ff9b:1::1", "local-use NAT64"),
]
PUBLIC_ADDRESSES = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "151.101.1.69",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "2a00:1450:4001:82a::200e",
]


@pytest.mark.parametrize(("address", "why"), REFUSED_ADDRESSES)
def test_check_address_refuses(address, why):
    with pytest.raises(urlguard.UnsafeUrl):
        urlguard.check_address(ipaddress.ip_address(address), NONE_ALLOWED)


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_check_address_accepts_public(address):
    urlguard.check_address(ipaddress.ip_address(address), NONE_ALLOWED)


def test_allowed_networks_are_an_explicit_exception():
    urlguard.check_address(ipaddress.ip_address("127.0.0.1"), LOOPBACK_ALLOWED)
    with pytest.raises(urlguard.UnsafeUrl):
        urlguard.check_address(ipaddress.ip_address("10.0.0.1"), LOOPBACK_ALLOWED)
    with pytest.raises(urlguard.UnsafeUrl):
        urlguard.check_address(ipaddress.ip_address("::1"), LOOPBACK_ALLOWED)


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/x",
        "https://LOCALHOST./x",
        "https://api.localhost/x",
        "https://db.internal/x",
        "https://metadata.google.internal/x",
        "https://printer.local/x",
        "https://Printer.Local./x",
        "https://2130706433/x",
        "https://0177.0.0.1/x",
        "https://0x7f.0.0.1/x",
        "https://0x7f000001/x",
        "https://127.1/x",
        "https://10.1/x",
        "https://017700000001/x",
        "https://user:pass@example.com/x",
        "https://user@example.com/x",
        "https://:pw@example.com/x",
        "ftp://example.com/x",
        "file:///etc/passwd",
        "gopher://example.com/",
        "https:///nohost",
        "not a url",
        "https://example.com:99999/x",
    ],
)
def test_parse_refuses_statically(url):
    with pytest.raises(urlguard.UnsafeUrl):
        urlguard.parse(url)


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("https://Hooks.Example.com/x", "hooks.example.com", 443),
        ("https://hooks.example.com:8443/x?y=1", "hooks.example.com", 8443),
        ("https://hooks.example.com./x", "hooks.example.com", 443),
    ],
)
def test_parse_accepts_names(url, host, port):
    target = urlguard.parse(url)
    assert (target.scheme, target.host, target.port, target.ip) == ("https", host, port, None)


def stub(table):
    calls = []

    async def resolve(host, port):
        calls.append(host)
        return [ipaddress.ip_address(a) for a in table.get(host, [])]

    resolve.calls = calls
    return resolve


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (["10.0.0.5"], "private"),
        (["127.0.0.1"], "loopback"),
        (["169.254.169.254"], "link-local"),
        (["::1"], "IPv6 loopback"),
        (["fd00::5"], "unique-local"),
        (["::ffff:127.0.0.1"], "mapped"),
        (["64:ff9b::7f00:1"], "NAT64"),
        (["93.184.216.34", "10.0.0.5"], "mixed public and private"),
        (["2606:4700:4700::1111", "fe80::1"], "mixed IPv6"),
        ([], "no answer"),
    ],
)
async def test_check_url_refuses_names_resolving_to_non_public(answer, why):
    resolve = stub({"hooks.example.com": answer})
    with pytest.raises(urlguard.UnsafeUrl):
        await urlguard.check_url("https://hooks.example.com/x", NONE_ALLOWED, resolve)
    assert resolve.calls == ["hooks.example.com"]


@pytest.mark.parametrize(
    "answer", [["93.184.216.34"], ["8.8.8.8", "1.1.1.1"], ["2606:4700:4700::1111", "1.1.1.1"]]
)
async def test_check_url_accepts_public_names(answer):
    resolve = stub({"hooks.example.com": answer})
    target = await urlguard.check_url("https://hooks.example.com/x", NONE_ALLOWED, resolve)
    assert target.host == "hooks.example.com"


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/x",
        "https://10.0.0.1/x",
        "https://0.0.0.0/x",
        "https://[::1]/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://[::ffff:7f00:1]/x",
        "https://[2002:7f00:1::]/x",
        "https://[64:ff9b::7f00:1]/x",
        "https://[fe80::1%25eth0]/x",
        "https://169.254.169.254/x",
    ],
)
async def test_check_url_refuses_literal_addresses(url):
    resolve = stub({})
    with pytest.raises(urlguard.UnsafeUrl):
        await urlguard.check_url(url, NONE_ALLOWED, resolve)


async def test_check_url_accepts_public_literal_without_resolving():
    resolve = stub({})
    await urlguard.check_url("https://8.8.8.8/hook", NONE_ALLOWED, resolve)
    await urlguard.check_url("https://[2606:4700:4700::1111]/hook", NONE_ALLOWED, resolve)
    assert resolve.calls == []


async def test_plain_http_is_refused_for_public_targets():
    resolve = stub({"hooks.example.com": ["93.184.216.34"]})
    with pytest.raises(urlguard.UnsafeUrl):
        await urlguard.check_url("http://hooks.example.com/x", NONE_ALLOWED, resolve)
    with pytest.raises(urlguard.UnsafeUrl):
        await urlguard.check_url("http://8.8.8.8/x", NONE_ALLOWED, resolve)


async def test_plain_http_only_inside_allowed_networks():
    resolve = stub({"dev.example.com": ["127.0.0.1"]})
    await urlguard.check_url("http://127.0.0.1:8080/x", LOOPBACK_ALLOWED, resolve)
    await urlguard.check_url("http://dev.example.com:8080/x", LOOPBACK_ALLOWED, resolve)
    with pytest.raises(urlguard.UnsafeUrl):
        await urlguard.check_url("http://127.0.0.1:8080/x", NONE_ALLOWED, resolve)
    with pytest.raises(urlguard.UnsafeUrl):
        await urlguard.check_url("http://localhost:8080/x", LOOPBACK_ALLOWED, resolve)


@pytest.mark.parametrize(
    "host",
    [
        "".join(chr(ord(c) + 0xFEE0) for c in "127.0.0.1"),  # fullwidth digits and dots
        "127.0.0.1".replace(".", "\u3002"),  # ideographic full stops
        "127.0.0.1".replace(".", "\uff61"),  # halfwidth ideographic full stops
        "\u2460\u2461\u2466.0.0.1",  # circled digits
    ],
)
async def test_unicode_forms_of_an_address_are_that_address(host):
    target = urlguard.parse(f"https://{host}/x")
    assert (target.host, target.ip) == ("127.0.0.1", ipaddress.ip_address("127.0.0.1"))
    resolve = stub({})
    with pytest.raises(urlguard.UnsafeUrl, match=r"^127\.0\.0\.1 is not a public address$"):
        await urlguard.check_url(f"https://{host}/x", NONE_ALLOWED, resolve)
    assert resolve.calls == []  # a literal: the client connects without resolving either


def test_names_are_judged_as_the_client_spells_them():
    fullwidth_localhost = "".join(chr(ord(c) + 0xFEE0) for c in "localhost")
    with pytest.raises(urlguard.UnsafeUrl, match="localhost is not a public host name"):
        urlguard.parse(f"https://{fullwidth_localhost}/x")
    # IDNA 2008 (what yarl and so aiohttp use), not Python's IDNA 2003 codec ("fass.de").
    assert urlguard.parse("https://fa\u00df.de/x").host == "xn--fa-hia.de"


async def test_a_resolved_refusal_names_the_host_not_the_address():
    resolve = stub({"vm": ["10.1.2.3"]})
    with pytest.raises(urlguard.UnsafeUrl) as refused:
        await urlguard.check_url("https://vm/x", NONE_ALLOWED, resolve)
    assert str(refused.value) == "vm resolves to a non-public address"
