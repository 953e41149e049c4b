"""OpenAPI 3.1 at /openapi.json: version, security scheme, ids, summaries, error responses."""

from __future__ import annotations

import re


async def test_document_basics(client):
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    doc = response.json()
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["version"] == "1.27.0"
    scheme = doc["components"]["securitySchemes"]["ApiKey"]
    assert scheme == {**scheme, "type": "apiKey", "in": "header", "name": "x-api-key"}
    assert "HTTPValidationError" not in doc["components"]["schemas"]


async def test_every_operation_is_documented(client):
    doc = (await client.get("/openapi.json")).json()
    ids = []
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            ids.append(op["operationId"])
            assert re.fullmatch(r"[a-z][a-z0-9_]*", op["operationId"]), op["operationId"]
            assert op.get("summary"), (method, path)
            assert "422" not in op["responses"] or "ErrorBody" in str(op["responses"]["422"])
            if path == "/api/v1/assistants/grants/exchange":
                # The body is the credential: no key, so no workspace to keep idempotency in.
                assert op.get("security") == [], (method, path)
                assert "Idempotency-Key" not in str(op.get("parameters")), (method, path)
            elif path.startswith("/api/v1"):
                # A key, or an assistant's bearer token.
                assert op.get("security") == [{"ApiKey": []}, {"AssistantToken": []}], (
                    method,
                    path,
                )
                assert "401" in op["responses"], (method, path)
                if method in {"post", "put", "patch", "delete"}:
                    # Previews only read: never counted against the write limit.
                    counted = not op.get("x-read-only")
                    assert ("429" in op["responses"]) is counted, (method, path)
    assert len(ids) == len(set(ids))


async def test_docs_page_renders(client):
    response = await client.get("/docs")
    assert response.status_code == 200
    assert "swagger" in response.text.lower()
