"""What the published document refuses, the service refuses.

The other half of test_contract.py (which checks that valid requests are accepted):
schemathesis generates requests that break the document, every operation, in-process against
the ASGI app with a fixed seed: the coverage phase's boundary values (an empty string for an
enum, a pattern or a format; one past a length; a missing required field) and fuzzed
mutations. Each must be refused with a 4xx, never answered as if it were valid, never a 5xx.
413 counts as a refusal: it is the spec's answer to content over its size limit (a template's
`text_content` past 200,000 characters, a body past 2 MB).

Found this way, and fixed so both sides say the same: an unknown or empty campaign status, an
empty audit-log cursor, an empty contact status, sort or direction, an empty list-member status
or suppression reason (all refused now), and contact `from` / `to`, suppression entries and a
template preview's empty `contact_id`, which the spec or the service take as they come (now
published so).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import Status, events

from mailroom.app import create_app
from mailroom.settings import Settings
from mailroom.webhooks import client as webhook_client
from tests.conftest import BACKEND
from tests.foundation.test_contract import (
    _message,
    _prepare,
    _public_address,
    _register_upload_strategies,
)

pytestmark = pytest.mark.skipif(
    BACKEND != "sqlite", reason="the contract run is SQLite's (one in-process database file)"
)

REFUSALS = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]
PHASES = ("coverage", "fuzzing")
# A bigger budget or another seed finds more when schemas change:
# MAILROOM_CONTRACT_EXAMPLES=50 MAILROOM_CONTRACT_SEED=7 pytest tests/foundation/test_contract_refusals.py
MAX_EXAMPLES = int(os.environ.get("MAILROOM_CONTRACT_EXAMPLES", "5"))
SEED = int(os.environ.get("MAILROOM_CONTRACT_SEED", "20261127"))


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root: Path = tmp_path_factory.mktemp("refusals")
    url = f"sqlite+aiosqlite:///{root / 'refusals.db'}"
    key = asyncio.run(_prepare(url))
    app = create_app(
        Settings(
            database_url=url,
            data_dir=root / "var",
            secret_key="contract-secret",
            public_url="http://testserver",
        )
    )
    config = SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "suppress-health-check": ["filter_too_much", "too_slow"],
            "headers": {"x-api-key": key},
            "generation": {"max-examples": MAX_EXAMPLES, "mode": "negative"},
            "checks": {
                "enabled": False,
                "not_a_server_error": {"enabled": True},
                "negative_data_rejection": {"enabled": True, "expected-statuses": REFUSALS},
            },
            "phases": {
                name: {"enabled": name in PHASES} for name in (*PHASES, "examples", "stateful")
            },
        }
    )
    _register_upload_strategies()
    resolve, webhook_client.resolve_host = webhook_client.resolve_host, _public_address
    try:
        yield schemathesis.openapi.from_asgi("/openapi.json", app, config=config)
    finally:
        webhook_client.resolve_host = resolve


def test_every_operation_refuses_what_its_document_refuses(api_schema: Any) -> None:
    failures: list[str] = []
    errors: list[str] = []
    operations: set[str] = set()
    for event in schemathesis.engine.from_schema(api_schema).execute():
        if isinstance(event, events.NonFatalError | events.FatalError):
            where = f"{getattr(event, 'label', '?')} ({getattr(event, 'phase', '?')})"
            errors.append(f"{type(event).__name__} in {where}: {getattr(event, 'value', event)}")
        if not isinstance(event, events.ScenarioFinished):
            continue
        recorder = event.recorder
        for case_id, nodes in recorder.checks.items():
            case = recorder.cases[case_id].value
            operation = f"{case.method.upper()} {case.operation.path}"
            operations.add(operation)
            interaction = recorder.interactions.get(case_id)
            response = interaction.response if interaction else None
            for node in nodes:
                if node.status != Status.FAILURE:
                    continue
                status = response.status_code if response is not None else None
                phase = getattr(case.meta, "phase", None)
                what = getattr(getattr(phase, "data", None), "description", "") or ""
                failures.append(
                    f"{operation} [{node.name}] -> {status} {_message(response)!r}; {what}; "
                    f"query={case.query} body={str(case.body)[:200]}"
                )
    assert not errors, "\n".join(errors)
    assert not failures, f"{len(failures)} failure(s):\n" + "\n".join(sorted(set(failures))[:40])
    documented = {
        f"{method.upper()} {path}"
        for path, methods in api_schema.raw_schema["paths"].items()
        for method in methods
    }
    # Operations with no parameter or body to break have no negative case to send.
    assert len(operations & documented) >= len(documented) * 3 // 4, sorted(documented - operations)
