"""Spec, Versioning: `/api/v1/` prefix, OpenAPI 3.1 at `/openapi.json`, interface 1.27.0."""

from __future__ import annotations

import pytest

from tests.spec_foundation.helpers import ROUTES

ROW_FIELDS = {
    "email_hash",
    "reason",
    "source",
    "created_at",
    "email_masked",
    "email_domain",
    "contact",
    "liftable",
}


@pytest.fixture
async def doc(client):
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


async def test_openapi_31_with_interface_version_1_27_0_without_a_key(doc):
    assert doc["openapi"].startswith("3.1.")
    assert doc["info"]["version"] == "1.27.0"


async def test_security_scheme_is_the_x_api_key_header(doc):
    schemes = doc["components"]["securitySchemes"]
    header_schemes = [
        s for s in schemes.values() if s.get("type") == "apiKey" and s.get("in") == "header"
    ]
    assert [s["name"] for s in header_schemes] == ["x-api-key"]


async def test_every_api_operation_is_under_api_v1(doc):
    for path in doc["paths"]:
        assert path.startswith("/api/v1/") or path == "/api/v1" or not path.startswith("/api"), path


@pytest.mark.parametrize(("method", "path", "permission"), ROUTES)
async def test_spec_routes_are_documented_with_their_errors(doc, method, path, permission):
    templated = (
        path.replace("00000000-0000-0000-0000-000000000000/tags/00000000", "{id}/tags/{tagId}")
        .replace("-0000-0000-0000-000000000000", "")
        .replace("00000000", "{id}")
        .replace("some_key", "{key}")
        .replace("abcdefgh.png", "{id}")
    )
    operations = doc["paths"].get(templated)
    assert operations is not None, templated
    op = operations.get(method.lower())
    assert op is not None, (method, templated)
    assert op.get("operationId")
    assert op.get("summary")
    responses = op["responses"]
    assert "401" in responses and "403" in responses, (method, templated, sorted(responses))
    if method in {"POST", "PUT", "PATCH", "DELETE"}:
        assert "429" in responses, (method, templated)
    if "{" in templated:
        assert "404" in responses, (method, templated)
    for code, response in responses.items():
        if code.startswith(("4", "5")):
            assert "ErrorBody" in str(response), (method, templated, code)


async def test_error_body_schema_is_error_string(doc):
    schema = doc["components"]["schemas"]["ErrorBody"]
    assert schema["properties"]["error"]["type"] == "string"
    assert "error" in schema["required"]


async def test_suppression_routes_document_the_spec_status_codes(doc):
    paths = doc["paths"]
    assert {"400", "413", "422", "500"} <= set(paths["/api/v1/suppressions"]["post"]["responses"])
    assert "400" in paths["/api/v1/suppressions"]["get"]["responses"]
    assert "400" in paths["/api/v1/suppressions/list"]["get"]["responses"]
    lift = set(paths["/api/v1/suppressions/lift"]["post"]["responses"])
    assert {"200", "400", "403", "404", "409"} <= lift
    assert "403" in paths["/api/v1/suppressions/export"]["get"]["responses"]


async def test_suppression_row_schema_has_the_spec_fields(doc):
    row = doc["components"]["schemas"]["SuppressionRow"]
    assert set(row["properties"]) == ROW_FIELDS
    contact = doc["components"]["schemas"]["ContactRef"]
    assert set(contact["properties"]) == {"id", "email", "status"}


async def test_docs_page_renders_the_document(client):
    response = await client.get("/docs")
    assert response.status_code == 200
    assert "/openapi.json" in response.text
