"""A real client generator builds every operation of the published document.

openapi-python-client (the library the `openapi-python-client` command runs, with its
`literal_enums` option) generates a client from the app's /openapi.json into a temporary
directory: it reports no warning (it skips an endpoint whose schema it cannot build, e.g. the
automation step tree when it was an inline recursive union), and every operation id of the
document has its module, with its request functions, in the client's `api` packages.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from openapi_python_client import generate
from openapi_python_client.config import Config, ConfigFile, MetaType

from tests.conftest import BACKEND

pytestmark = pytest.mark.skipif(
    BACKEND != "sqlite", reason="the document is the same on both databases"
)


async def test_generated_client_has_every_operation(client, tmp_path: Path) -> None:
    document = (await client.get("/openapi.json")).json()
    source = tmp_path / "openapi.json"
    source.write_text(json.dumps(document))
    config = Config.from_sources(
        # No post hooks: formatting the output (ruff) is not what is tested.
        ConfigFile(literal_enums=True, post_hooks=[]),
        MetaType.NONE,
        source,
        "utf-8",
        overwrite=True,
        output_path=tmp_path / "client",
    )
    problems = await asyncio.to_thread(generate, config=config)
    assert not problems, "\n\n".join(
        f"{problem.level}: {problem.header}\n{(problem.detail or '')[:1000]}"
        for problem in problems
    )

    modules = {path.stem: path for path in (tmp_path / "client" / "api").glob("*/*.py")}
    operation_ids = {
        operation["operationId"]
        for item in document["paths"].values()
        for operation in item.values()
    }
    assert "create_automation" in operation_ids and "update_automation" in operation_ids
    missing = sorted(operation_ids - set(modules))
    assert not missing, f"not in the generated client: {missing}"
    for operation_id in operation_ids:
        assert "def sync_detailed(" in modules[operation_id].read_text(), operation_id
