"""Sending: a campaign to 50,000 contacts (`BENCH_SEND_RECIPIENTS`) sent by one `mailroom
worker` (default settings: a build process per core, 8 SMTP connections) to an SMTP sink in
its own process (bench/smtp_sink.py), every message rendered, built and DKIM-signed.

`BENCH_SEND_SINK=postfix`: into a private Postfix instead (tests/postfix.py: Debian's package,
installed when missing; its smtpd queues each message and hands it to `discard`), the figures
counted from the send log (a row is `sent` once Postfix said 250); no `/send` probe latency.

Figures: the snapshot (the `send` request: checks + one INSERT ... SELECT), messages per
second from the request to the last message at the sink, the worker's peak RSS (its own and
each build process's), and `/send` latency (request to arrival at the sink) p50/p99 for
transactional messages sent while the campaign goes out. Then where a message's CPU time goes:
render, MIME, DKIM, measured in this process on one core."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from sqlalchemy import func, select, update

from bench.common import BenchApp, BenchContext, percentiles, report
from mailroom.accounts import service as accounts_service
from mailroom.core.clock import utcnow
from mailroom.domains import dkim
from mailroom.models import SendingDomain, SendLog
from mailroom.sending import mime
from mailroom.sending.build import Content, Job, Recipient, Sender, SignerSpec, build
from mailroom.templates.render import compile_cached, merge_context

RECIPIENTS = int(os.environ.get("BENCH_SEND_RECIPIENTS", "50000"))
SINK = os.environ.get("BENCH_SEND_SINK", "aiosmtpd")  # or "postfix"
IMPORT_CHUNK = 25_000  # an import takes up to 50,000 rows
PROBE_EVERY = 0.25  # seconds between transactional probes
DOMAIN = "shop.example"

PARAGRAPH = (
    "<tr><td style='padding:12px'><p>Spring is here, and so is our biggest sale of the season. "
    "Everything in the garden range is 20% off until Sunday, with free delivery over 50.</p>"
    "<p><a href='https://shop.example/garden'>Shop the garden range</a></p></td></tr>"
)
HTML = (
    "<html><head><style>p { color: #333; font-family: Helvetica, Arial } "
    "a { color: #0a6 }</style></head><body><table width='100%'>"
    "<tr><td><h1>Hello {{ first_name | default('there') }},</h1></td></tr>"
    + PARAGRAPH
    * 40
    + "<tr><td><p>Your code {{ custom_fields.code }} for {{ email }} from "
    "{{ workspace.name }}.</p><p><a href='{{ unsubscribe_url }}'>Unsubscribe</a> | "
    "<a href='{{ webview_url }}'>View online</a></p></td></tr></table></body></html>"
)


@dataclass
class SinkState:
    count: int = 0
    unique: int = 0
    arrivals: dict[str, float] = field(default_factory=dict)
    # Postfix: the campaign's sent rows, read from the send log (no stdout to follow)
    refresh: Callable[[], Awaitable[None]] | None = None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _follow(stream: asyncio.StreamReader, state: SinkState, ready: asyncio.Event) -> None:
    while line := await stream.readline():
        parts = line.decode().split()
        if parts[0] == "ready":
            ready.set()
        elif parts[0] == "count":
            state.count, state.unique = int(parts[1]), int(parts[2])
        elif parts[0] == "tx":
            state.arrivals.setdefault(parts[1], float(parts[2]))


async def _ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


async def _import(
    bench: BenchApp, emails: list[str], list_id: str | None, headers: dict[str, str] | None = None
) -> None:
    for start in range(0, len(emails), IMPORT_CHUNK):
        rows = "\n".join(
            f"{e},Reader{i},C{i:06d}" for i, e in enumerate(emails[start:][:IMPORT_CHUNK])
        )
        data = {"check_domains": "false", "skip_duplicates": "true"}
        if list_id:
            data["list_id"] = list_id
        response = await bench.client.post(
            "/api/v1/contacts/import",
            files={"file": ("c.csv", f"email,first_name,code\n{rows}".encode(), "text/csv")},
            data=data,
            headers=headers or bench.headers,
        )
        await _ok(response)


async def _prepare(bench: BenchApp) -> tuple[str, str, dict[str, str]]:
    """The audience, the probes' contacts, a verified domain; returns (campaign id, domain id)."""
    c, h = bench.client, bench.headers
    news = (await _ok(await c.post("/api/v1/lists", json={"name": "News"}, headers=h), 201))["list"]
    await _import(bench, [f"reader{i}@inbox{i % 50}.io" for i in range(RECIPIENTS)], news["id"])
    # The probes are another tenant's transactional mail (the campaign takes the whole
    # Business contact allowance of its own account).
    async with bench.app.state.db.transaction() as session:
        _account, other = await accounts_service.create_workspace(session, plan="pro")
        key = await accounts_service.create_key(session, other.id)
    probe_headers = {"x-api-key": key.secret}
    await _import(bench, [f"tx{i}@inbox.io" for i in range(2000)], None, probe_headers)
    for headers in (h, probe_headers):
        created = await c.post("/api/v1/domains", json={"domain": DOMAIN}, headers=headers)
        domain = (await _ok(created, 201))["domain"]
        async with bench.app.state.db.transaction() as session:
            now = utcnow()
            await session.execute(
                update(SendingDomain)
                .where(SendingDomain.id == domain["id"])
                .values(status="verified", verified_at=now, last_checked_at=now)
            )
        # An established domain: the bench measures throughput, not the warm-up allowance.
        skip = {"skip_warmup": True}
        await _ok(await c.patch(f"/api/v1/domains/{domain['id']}", json=skip, headers=headers))
        identity = {"from_email": f"hello@{DOMAIN}", "from_name": "Shop"}
        await _ok(await c.patch("/api/v1/sending", json=identity, headers=headers))
        if headers is h:
            own_domain = domain["id"]
    campaign = await c.post(
        "/api/v1/campaigns",
        json={
            "name": "Spring sale",
            "subject": "Spring sale, {{ first_name }}: 20% off the garden",
            "html_content": HTML,
            "audience": {"list_ids": [news["id"]]},
        },
        headers=h,
    )
    return (await _ok(campaign, 201))["campaign"]["id"], own_domain, probe_headers


def _rss_mb(process: psutil.Process) -> tuple[float, float]:
    """(the worker's RSS, its largest build process's RSS), in MB."""
    own = process.memory_info().rss / 2**20
    children = [p.memory_info().rss / 2**20 for p in process.children(recursive=True)]
    return own, max(children, default=0.0)


async def run(ctx: BenchContext) -> None:
    if SINK == "postfix":
        await _run_into_postfix(ctx)
        return
    port = _free_port()
    sink = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.smtp_sink", str(port), stdout=asyncio.subprocess.PIPE
    )
    state, ready = SinkState(), asyncio.Event()
    assert sink.stdout is not None
    follower = asyncio.create_task(_follow(sink.stdout, state, ready))
    await asyncio.wait_for(ready.wait(), 30)
    try:
        await _run_with(ctx, f"smtp://127.0.0.1:{port}?starttls=never", state, [sink.pid])
    finally:
        sink.terminate()
        await sink.wait()
        follower.cancel()


async def _run_into_postfix(ctx: BenchContext) -> None:
    from tests.postfix import Postfix

    reason = Postfix.unavailable()
    if reason:
        print(f"[{ctx.backend}] send into Postfix skipped: {reason}")
        return
    postfix = Postfix({"*": "discard:"})
    postfix.start()
    try:
        master = _postfix_master(postfix.home)
        await _run_with(ctx, f"{postfix.url}?starttls=never", SinkState(), [master])
    finally:
        postfix.stop()


def _postfix_master(home: str | os.PathLike[str]) -> int:
    pid_file = os.path.join(home, "queue", "pid", "master.pid")
    for _ in range(100):
        if os.path.exists(pid_file):
            return int(Path(pid_file).read_text().split()[0])
        time.sleep(0.1)
    raise RuntimeError("postfix did not start")


async def _run_with(ctx: BenchContext, smtp_url: str, state: SinkState, sink: list[int]) -> None:
    async with ctx.fresh_app(plan="business") as bench:
        campaign_id, domain_id, probe_headers = await _prepare(bench)
        bench.settings.smtp_url = smtp_url  # the API now checks the sender's domain
        if SINK == "postfix":

            async def refresh() -> None:
                async with bench.app.state.db.session() as session:
                    state.count = state.unique = (
                        await session.scalar(
                            select(func.count()).where(
                                SendLog.campaign_id == campaign_id, SendLog.status == "sent"
                            )
                        )
                        or 0
                    )

            state.refresh = refresh
        # BENCH_SEND_PROFILE=<file>: the worker runs under cProfile (read with pstats).
        profile = os.environ.get("BENCH_SEND_PROFILE")
        command = ["-m", "cProfile", "-o", profile] if profile else []
        worker = subprocess.Popen(
            [sys.executable, *command, "-m", "mailroom", "worker"],
            env={
                **os.environ,
                "MAILROOM_DATABASE_URL": bench.settings.resolved_database_url,
                "MAILROOM_SECRET_KEY": "bench",
                "MAILROOM_DATA_DIR": bench.tmp,
                "MAILROOM_SMTP_URL": smtp_url,
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            await asyncio.sleep(3.0)  # the worker starts (imports, migrations check)
            await _campaign(ctx, bench, campaign_id, worker, state, sink, probe_headers)
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
        await _cpu_split(ctx, bench, domain_id)


def _cpu_by_pid(processes: list[psutil.Process]) -> dict[int, float]:
    found = {}
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:  # a Postfix daemon that ended
            continue
        found[process.pid] = times.user + times.system
    return found


def _groups(worker: psutil.Process, sink: list[int]) -> dict[str, list[psutil.Process]]:
    """The processes whose CPU is counted, by role: the worker, its build processes, the sink
    (Postfix: its master and every daemon under it), this process (the API)."""
    sinks: list[psutil.Process] = []
    for pid in sink:
        top = psutil.Process(pid)
        sinks.extend([top, *top.children(recursive=True)])
    return {
        "worker": [worker],
        "build": worker.children(recursive=True),
        "sink": sinks,
        "api": [psutil.Process()],
    }


async def _campaign(
    ctx: BenchContext,
    bench: BenchApp,
    campaign_id: str,
    worker: Any,
    state: SinkState,
    sink: list[int],
    probe_headers: dict[str, str],
) -> None:
    process = psutil.Process(worker.pid)
    peak_own = peak_child = 0.0
    cpu_before = _cpu_by_pid([p for g in _groups(process, sink).values() for p in g])
    started = time.perf_counter()
    response = await bench.client.post(
        f"/api/v1/campaigns/{campaign_id}/send", headers=bench.headers
    )
    snapshot_s = time.perf_counter() - started
    assert (await _ok(response, 202))["campaign"]["stats"]["recipients"] == RECIPIENTS
    sent_at: dict[str, float] = {}
    probe = 0
    deadline = time.monotonic() + 1800
    while state.count - len(state.arrivals) < RECIPIENTS and time.monotonic() < deadline:
        if state.refresh is not None:
            await state.refresh()
        address = f"tx{probe}@inbox.io"
        sent_at[address] = time.time()
        queued = await bench.client.post(
            "/api/v1/send",
            json={"to": address, "subject": "Your receipt", "text_content": "Thanks!"},
            headers=probe_headers,
        )
        await _ok(queued, 202)
        probe += 1
        own, child = _rss_mb(process)
        peak_own, peak_child = max(peak_own, own), max(peak_child, child)
        await asyncio.sleep(PROBE_EVERY)
    elapsed = time.perf_counter() - started
    campaign_messages = state.count - len(state.arrivals)
    # Processes started meanwhile (build processes on first use, Postfix's daemons) count
    # from zero; CPU figures are per campaign message.
    cpu_ms: dict[str, float] = {}
    for role, members in _groups(process, sink).items():
        after = _cpu_by_pid(members)
        spent = sum(after[pid] - cpu_before.get(pid, 0.0) for pid in after)
        cpu_ms[f"{role}_cpu_ms_per_msg"] = spent * 1000 / campaign_messages
    cpu_ms["engine_cpu_ms_per_msg"] = (
        cpu_ms["worker_cpu_ms_per_msg"] + cpu_ms["build_cpu_ms_per_msg"]
    )
    await asyncio.sleep(2.0)  # the last probes arrive
    latencies = [(state.arrivals[a] - t) * 1000 for a, t in sent_at.items() if a in state.arrivals]
    lat = percentiles(latencies)
    report(
        f"campaign to {RECIPIENTS:,} into {SINK} (worker: {os.cpu_count()} build processes, "
        "8 SMTP connections)",
        ctx.backend,
        snapshot_s=snapshot_s,
        messages=campaign_messages,
        unique_message_ids=state.unique,
        seconds=elapsed,
        messages_per_s=campaign_messages / elapsed,
        worker_peak_rss_mb=peak_own,
        build_process_peak_rss_mb=peak_child,
    )
    report("CPU per campaign message, by process", ctx.backend, **cpu_ms)
    if SINK == "postfix":
        return
    report(
        "/send while the campaign runs (request -> at the sink)",
        ctx.backend,
        probes=len(sent_at),
        arrived=len(latencies),
        p50_ms=lat["p50"],
        p99_ms=lat["p99"],
    )


async def _cpu_split(ctx: BenchContext, bench: BenchApp, domain_id: str) -> None:
    """Where one message's CPU time goes, on one core: render, MIME, DKIM (and the RSA
    signature alone), then a whole tracked build as the engine makes it."""
    async with bench.app.state.db.session() as session:
        row = await session.scalar(select(SendingDomain).where(SendingDomain.id == domain_id))
    assert row is not None
    signer = dkim.signer_for(row, "bench")
    count = 1000
    # Tracked as a campaign is by default (its 41 links and the pixel: a token each).
    content = Content(
        ("bench",),
        "Spring sale, {{ first_name }}",
        "",
        HTML,
        "",
        track_opens=True,
        track_clicks=True,
    )
    compiled = compile_cached(content.key, content.subject, "", HTML, "")
    recipients = [
        Recipient(
            row_id=f"row{i}",
            email=f"reader{i}@inbox.io",
            first_name=f"Reader{i}",
            last_name="",
            custom_fields={"code": f"C{i:06d}"},
            message_id=f"row{i}@{DOMAIN}",
            unsubscribe_url=f"https://mail.example/u/token{i}",
            list_unsubscribe=(f"https://mail.example/u/token{i}", f"mailto:u+{i}@{DOMAIN}"),
        )
        for i in range(count)
    ]
    now = utcnow()
    t0 = time.perf_counter()
    rendered = [
        compiled.render(
            merge_context(
                r,
                workspace_name="Shop",
                unsubscribe_url=r.unsubscribe_url,
                preferences_url="",
                webview_url="",
                variables=None,
            )
        )
        for r in recipients
    ]
    t1 = time.perf_counter()
    raws = [
        mime.build(
            mime.Message(
                from_email=f"hello@{DOMAIN}",
                from_name="Shop",
                to=r.email,
                subject=m.subject,
                html=m.html,
                text=m.text,
                message_id=r.message_id,
                date=now,
                list_unsubscribe=r.list_unsubscribe,
            )
        )
        for r, m in zip(recipients, rendered, strict=True)
    ]
    t2 = time.perf_counter()
    for raw in raws:
        signer.signature(raw)
    t3 = time.perf_counter()
    # The floor under DKIM: the RSA-2048 signature alone, over a header block's size.
    key: Any = signer._key
    block = raws[0][:600]
    started = time.perf_counter()
    for _ in range(count):
        key.sign(block, dkim._PADDING, dkim._SHA256)
    rsa_us = (time.perf_counter() - started) / count * 1e6
    job = Job(
        content=content,
        sender=Sender(
            f"hello@{DOMAIN}",
            "Shop",
            "",
            SignerSpec(row.id, row.domain, row.dkim_selector, row.dkim_private_key),
        ),
        workspace_name="Shop",
        secret="bench",
        date=now,
        recipients=recipients,
        base_url="https://mail.example",
        public_url="https://mail.example",
    )
    t4 = time.perf_counter()
    build(job)
    t5 = time.perf_counter()
    size = sum(len(r) for r in raws) / count
    report(
        f"CPU per message, one core ({size / 1024:.1f} KB messages)",
        ctx.backend,
        render_us=(t1 - t0) / count * 1e6,
        mime_us=(t2 - t1) / count * 1e6,
        dkim_us=(t3 - t2) / count * 1e6,
        of_which_rsa_sign_us=rsa_us,
        whole_build_us=(t5 - t4) / count * 1e6,
        one_core_messages_per_s=count / (t5 - t4),
    )
