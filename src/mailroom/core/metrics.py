"""The process's Prometheus metrics (`prometheus-client`): what the code counts as it works.
`GET /metrics` (system.metrics) exposes them with the queue figures it reads from the database
at scrape time.

Several processes (`serve --workers N`, `mailroom worker`, `mailroom bounces`) report as one
through the library's multiprocess mode: each process writes its values to files in
`PROMETHEUS_MULTIPROC_DIR` (core.multiprocess, called by those commands before this module is
imported), and the scrape sums them. The library chooses its mode when it is first imported,
so `MULTIPROCESS` is read then too.

Labels are bounded: a route's template (never its path), a method among the standard ones, a
status code, an email's kind, an outcome word. Never an address, a key, or a contact's or
workspace's id.
"""

from __future__ import annotations

import os

from prometheus_client import Counter, Gauge, Histogram

from mailroom.core.multiprocess import MULTIPROC_ENV

MULTIPROCESS = bool(os.environ.get(MULTIPROC_ENV))

# Seconds: from a fast read (5 ms) to a slow import or export request (30 s).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

HTTP_REQUESTS = Counter(
    "mailroom_http_requests",
    "HTTP requests answered, by route template, method and status.",
    ["route", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "mailroom_http_request_duration_seconds",
    "Time from a request's arrival to the end of its answer, by route template and method.",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
EMAILS = Counter(
    "mailroom_emails",
    "Emails handled by the sending engine, by kind (campaign, transactional, automation, ...) "
    "and outcome (sent, deferred, bounced, failed, skipped).",
    ["kind", "outcome"],
)
SMTP_CONNECTIONS = Counter(
    "mailroom_smtp_connections",
    "SMTP connections to the relay opened (result=opened) or that failed to open (failed).",
    ["result"],
)
SMTP_OPEN = Gauge(
    "mailroom_smtp_connections_open",
    "SMTP connections to the relay open now.",
    multiprocess_mode="livesum",
)
DKIM_SIGNING = Histogram(
    "mailroom_dkim_signing_seconds",
    "Time to DKIM-sign one message.",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1),
)
WEBHOOK_DELIVERIES = Counter(
    "mailroom_webhook_deliveries",
    "Webhook delivery attempts by outcome (delivered, retry, failed, abandoned).",
    ["outcome"],
)
BOUNCE_MESSAGES = Counter(
    "mailroom_bounce_listener_messages",
    "Messages the inbound listener took, by what it made of them.",
    ["classification"],
)
DB_CONNECTIONS_IN_USE = Gauge(
    "mailroom_db_connections_in_use",
    "Pooled database connections checked out now.",
    ["pool"],
    multiprocess_mode="livesum",
)
DB_CONNECTION_WAIT = Histogram(
    "mailroom_db_connection_wait_seconds",
    "Time a unit of work waited for a pooled database connection.",
    ["pool"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0),
)
DB_POOL_TIMEOUTS = Counter(
    "mailroom_db_pool_timeouts",
    "Requests answered 503 because no pooled database connection came free in time.",
)

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OUTCOME_WORDS = {"retry": "deferred"}  # the engine's word -> the metric's


def email_outcome(kind: str, state: str) -> None:
    EMAILS.labels(kind=kind[:16] or "unknown", outcome=OUTCOME_WORDS.get(state, state)).inc()
