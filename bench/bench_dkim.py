"""DKIM signing: messages signed per second on one core for a realistic ~20 KB message (the
engine's MIME: multipart/alternative, HTML + text, List-Unsubscribe), and where the time goes
(line ends, header and body canonicalisation, body hash, RSA); then opening a stored key (why
the signer keeps it), threads versus processes, and dkimpy's own signer for comparison.

No database: `python -m bench dkim --backend sqlite` (the backend is not used)."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import dkim as dkimpy
from cryptography.hazmat.primitives import serialization

from bench.common import BenchContext, report
from mailroom.domains import dkim, keys
from mailroom.sending.mime import Message, build

SECONDS = 3.0  # per measurement
SECRET = "bench-secret"
DOMAIN_ID = "01a20aaa-0000-7000-8000-000000000001"

PARAGRAPH = (
    "Our spring collection is here: linen shirts, light jackets and the sandals you asked "
    "for. Members get early access until Friday, and  free returns\tas always. "
)


def realistic_message(n: int = 0) -> bytes:
    blocks = []
    for i in range(40):
        blocks.append(
            f'<tr><td style="padding:12px 24px;font-family:Helvetica,Arial,sans-serif;'
            f'font-size:15px;color:#333333">{PARAGRAPH}'
            f'<a href="https://mail.shop.example/c/{n:08x}{i:04x}?u=a1b2c3d4e5">Shop now</a>'
            f"</td></tr>\n"
        )
    html = (
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        '<table role="presentation" width="100%">\n' + "".join(blocks) + "</table>"
        "<p>Grüße aus Köln — the Shop crew</p></body></html>"
    )
    text = "\n\n".join(PARAGRAPH for _ in range(20)) + "\n\nGrüße aus Köln\n"
    return build(
        Message(
            from_email="hello@news.shop.example",
            from_name="Shop Crew",
            to=f"customer{n}@example.org",
            subject="Spring is here — 20% off for members",
            html=html,
            text=text,
            message_id=f"{n:08x}-4b1d-7000-8000-00000000abcd@news.shop.example",
            date=datetime(2026, 11, 23, 9, 30, tzinfo=UTC),
            list_unsubscribe=(f"https://mail.shop.example/u/{n:08x}",),
        )
    )


def rate(step: Callable[[], Any], seconds: float = SECONDS) -> float:
    """Calls of `step` per second of this thread's CPU time: what one core does, and little
    moved by other processes sharing the machine (wall-clock figures below are)."""
    count, started = 0, time.thread_time()
    deadline = started + seconds
    while True:
        for _ in range(20):
            step()
        count += 20
        now = time.thread_time()
        if now >= deadline:
            return count / (now - started)


def _sign_for(seconds: float, sealed: str, go: Any, out: Any) -> None:
    """A worker process: its own signer, signing for `seconds` once `go` is set; puts its
    count."""
    signer = dkim.cached_signer(
        domain_id=DOMAIN_ID,
        domain="news.shop.example",
        selector="mrbench",
        sealed_key=sealed,
        secret=SECRET,
    )
    message = realistic_message()
    go.wait()
    count, deadline = 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        signer.sign(message)
        count += 1
    out.put(count)


async def run(ctx: BenchContext) -> None:
    name = "dkim"
    pair = keys.generate()
    sealed = keys.seal(SECRET, DOMAIN_ID, pair.private_der)
    signer = dkim.cached_signer(
        domain_id=DOMAIN_ID,
        domain="news.shop.example",
        selector="mrbench",
        sealed_key=sealed,
        secret=SECRET,
    )
    message = realistic_message()
    prepared = dkim.crlf(message)
    fields, body = dkim.split_message(prepared)
    canonical = dkim.canonical_body(body)
    headers = b"".join(dkim.canonical_header(n, v) for n, v in fields) + b"dkim-signature:x"
    private = keys.load_private(pair.private_der)
    record = f"v=DKIM1; k=rsa; p={pair.public_b64}".encode()
    signed = signer.sign(message)
    assert dkimpy.verify(signed, dnsfunc=lambda _name, timeout=5: record), "bad signature"

    load = os.getloadavg()[0]
    report(
        name,
        ctx.backend,
        message_bytes=len(message),
        body_bytes=len(body),
        cores=os.cpu_count() or 1,
        load_average=load,
    )

    whole = rate(lambda: signer.sign(message))
    report(name, ctx.backend, signs_per_s_one_core=whole, ms_per_message=1000 / whole)
    # The engine's own MIME is CRLF already: `signature()` skips the line-end check.
    ready = rate(lambda: signer.signature(message) + message)
    report(name, ctx.backend, signs_per_s_crlf_ready=ready, ms_per_message=1000 / ready)

    parts = {
        "crlf_check": rate(lambda: dkim.crlf(message)),
        "split_headers": rate(lambda: dkim.split_message(prepared)),
        "canon_headers": rate(lambda: [dkim.canonical_header(n, v) for n, v in fields]),
        "canon_body": rate(lambda: dkim.canonical_body(body)),
        "sha256_body": rate(lambda: hashlib.sha256(canonical).digest()),
        "rsa_sign": rate(lambda: private.sign(headers, dkim._PADDING, dkim._SHA256)),
    }
    spent = {key: 1e6 / value for key, value in parts.items()}  # microseconds per message
    total = 1e6 / whole
    for key, micros in spent.items():
        report(name, ctx.backend, step=key, us=micros, share_pct=100 * micros / total)
    report(
        name,
        ctx.backend,
        step="rest (b64, fold, join)",
        us=max(0.0, total - sum(spent.values())),
    )

    # Opening a stored key: what the per-domain cache saves on every message.
    der = keys.unseal(SECRET, DOMAIN_ID, sealed)
    open_fast = rate(lambda: keys.load_private(keys.unseal(SECRET, DOMAIN_ID, sealed)), 1.0)
    open_checked = rate(lambda: serialization.load_der_private_key(der, password=None), 1.0)
    cached = rate(
        lambda: dkim.cached_signer(
            domain_id=DOMAIN_ID,
            domain="news.shop.example",
            selector="mrbench",
            sealed_key=sealed,
            secret=SECRET,
        )
    )
    report(
        name,
        ctx.backend,
        key_open_ms=1000 / open_fast,
        key_open_with_openssl_check_ms=1000 / open_checked,
        cache_hit_us=1e6 / cached,
    )

    # Threads: RSA keeps the GIL, so two threads sign no faster than one.
    def threaded(n: int) -> float:
        counts = [0] * n

        def work(slot: int) -> None:
            deadline = time.perf_counter() + SECONDS
            while time.perf_counter() < deadline:
                signer.sign(message)
                counts[slot] += 1

        threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sum(counts) / (time.perf_counter() - started)

    for n in (1, 2):
        report(name, ctx.backend, threads=n, wall_signs_per_s=threaded(n))

    # Processes: one signer each, one per core.
    cores = os.cpu_count() or 1
    spawn = multiprocessing.get_context("spawn")
    queue: Any = spawn.Queue()
    go = spawn.Event()
    workers = [
        spawn.Process(target=_sign_for, args=(SECONDS, sealed, go, queue)) for _ in range(cores)
    ]
    for worker in workers:
        worker.start()
    time.sleep(3)  # let every process import and load its key before the clock starts
    go.set()
    done = sum(queue.get() for _ in workers)
    for worker in workers:
        worker.join()
    report(name, ctx.backend, processes=cores, wall_signs_per_s=done / SECONDS)

    # dkimpy's pure-Python signer, for scale (never used by the service).
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    slow = rate(
        lambda: dkimpy.sign(
            message,
            b"mrbench",
            b"news.shop.example",
            pem,
            canonicalize=(b"relaxed", b"relaxed"),
            include_headers=[b"from", b"to", b"subject"],
        ),
        1.0,
    )
    report(name, ctx.backend, dkimpy_signs_per_s=slow)
