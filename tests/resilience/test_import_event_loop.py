"""An import's parsing and address checks run off the event loop: while a hostile upload is
worked, other clients' /healthz keeps being answered (issue 12 item 4: it waited up to 29 s).

Served by a real uvicorn in the test's event loop, so a blocked loop would show as /healthz
answering nothing until the upload is done: one silence as long as the parsing. No absolute
timing threshold (a faster machine parses sooner and gets fewer answers): only that no silence
took more than half of the upload's time.
"""

from __future__ import annotations

import asyncio
from itertools import pairwise

import httpx

from mailroom.contacts.addresses import MAX_FULL_CHECKS

UNUSUAL = (
    "The file has more than 1,000 distinct addresses or domains in an unusual form "
    "(non-ASCII or odd punctuation); split it"
)


def slow_addresses(count: int) -> bytes:
    """Distinct non-ASCII domains that only the full IDNA check proves too long (~1 ms each:
    3,000 of them held the loop ~2.5 s before)."""
    tail = ".".join(["ü" * 20] * 10)
    rows = "".join(f"x@ü{i}{'ü' * 14}.{tail}\n" for i in range(count))
    return f"email\n{rows}".encode()


async def test_healthz_answers_while_a_hostile_import_is_worked(server_url, factory):
    ws = await factory.workspace("business")
    content = slow_addresses(3 * MAX_FULL_CHECKS)
    answered: list[float] = []
    loop = asyncio.get_running_loop()
    async with httpx.AsyncClient(base_url=server_url, timeout=60) as http:
        started = loop.time()
        upload = asyncio.create_task(
            http.post(
                "/api/v1/contacts/import",
                files={"file": ("c.csv", content, "text/csv")},
                headers=ws.headers,
            )
        )
        while not upload.done():
            health = await http.get("/healthz")
            assert health.status_code == 200
            if not upload.done():
                answered.append(loop.time())
            await asyncio.sleep(0.01)
        response = await upload
        finished = loop.time()
        assert response.status_code == 400
        assert response.json() == {"error": UNUSUAL}
        # Before the fix: 3 answers, all before parsing began, then silence to the end.
        moments = [started, *answered, finished]
        silences = [later - earlier for earlier, later in pairwise(moments)]
        assert len(answered) >= 3 and max(silences) < (finished - started) / 2, silences
        listed = await http.get("/api/v1/contacts", headers=ws.headers)
        assert listed.json()["pagination"]["total"] == 0  # nothing of the file kept
