"""Hosted images: type from the bytes, limits, quota, upload rate, public URLs, S3."""

from __future__ import annotations

import dataclasses
import io
import os

import httpx
import pytest
from PIL import Image

from mailroom.core import plans


def image_bytes(kind: str, size: tuple[int, int] = (8, 8)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(buffer, format=kind)
    return buffer.getvalue()


SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><script>alert(1)</script></svg>'
)


async def _upload(client, headers, data: bytes, name: str, content_type: str = "image/png"):
    return await client.post(
        "/api/v1/media", files={"file": (name, data, content_type)}, headers=headers
    )


@pytest.fixture
async def pro(factory):
    return await factory.workspace("pro")


@pytest.mark.parametrize(
    ("kind", "ext", "mime"),
    [
        ("PNG", "png", "image/png"),
        ("JPEG", "jpg", "image/jpeg"),
        ("GIF", "gif", "image/gif"),
        ("WEBP", "webp", "image/webp"),
    ],
)
async def test_each_type_uploads_and_serves_back_byte_for_byte(client, pro, kind, ext, mime):
    data = image_bytes(kind)
    response = await _upload(client, pro.headers, data, f"picture.{ext}", mime)
    assert response.status_code == 201, response.text
    body = response.json()
    file = body["file"]
    assert file["id"].endswith(f".{ext}") and file["type"] == mime
    assert file["size"] == len(data) and file["name"] == f"picture.{ext}"
    assert body["used_bytes"] == len(data)
    assert body["quota_bytes"] == plans.PLANS["pro"].media_quota_bytes
    assert file["url"] == f"http://testserver/media/{file['id']}"
    served = await client.get(f"/media/{file['id']}")
    assert served.status_code == 200
    assert served.content == data
    assert served.headers["content-type"] == mime
    assert served.headers["x-content-type-options"] == "nosniff"
    assert "max-age=31536000" in served.headers["cache-control"]


async def test_type_comes_from_the_bytes(client, pro):
    png = image_bytes("PNG")
    response = await _upload(client, pro.headers, png, "photo.jpg", "image/jpeg")
    assert response.status_code == 201
    assert response.json()["file"]["type"] == "image/png"
    assert response.json()["file"]["id"].endswith(".png")
    for data, name, declared in [
        (SVG, "logo.svg", "image/svg+xml"),
        (b"just some text, honestly", "fake.png", "image/png"),
        (b"%PDF-1.4", "doc.gif", "image/gif"),
    ]:
        refused = await _upload(client, pro.headers, data, name, declared)
        assert refused.status_code == 415, name
        assert "PNG, JPEG, GIF or WebP" in refused.json()["error"]
    listing = (await client.get("/api/v1/media", headers=pro.headers)).json()
    assert listing["count"] == 1


async def test_over_2_mb_is_413(client, pro):
    png = image_bytes("PNG")
    data = png + b"\0" * (2 * 1024 * 1024 + 1 - len(png))
    assert len(data) == 2 * 1024 * 1024 + 1
    response = await _upload(client, pro.headers, data, "big.png")
    assert response.status_code == 413
    assert "2 MB" in response.json()["error"]
    exactly = png + b"\0" * (2 * 1024 * 1024 - len(png))
    assert (await _upload(client, pro.headers, exactly, "max.png")).status_code == 201


async def test_listing_newest_first_with_totals(client, pro):
    ids = []
    for n in range(3):
        response = await _upload(client, pro.headers, image_bytes("PNG", (n + 2, 2)), f"{n}.png")
        ids.append(response.json()["file"]["id"])
    body = (await client.get("/api/v1/media", headers=pro.headers)).json()
    assert body["configured"] is True and body["truncated"] is False
    assert [f["id"] for f in body["files"]] == list(reversed(ids))
    assert body["count"] == 3
    assert body["used_bytes"] == sum(f["size"] for f in body["files"])
    assert body["max_bytes"] == 2 * 1024 * 1024
    assert body["types"] == ["image/png", "image/jpeg", "image/gif", "image/webp"]


async def test_quota_is_403_with_numbers(client, pro, monkeypatch):
    small = dataclasses.replace(plans.PLANS["pro"], media_quota_bytes=1500)
    monkeypatch.setitem(plans.PLANS, "pro", small)
    first = await _upload(client, pro.headers, image_bytes("PNG", (10, 10)), "a.png")
    assert first.status_code == 201
    used = first.json()["used_bytes"]
    noisy = Image.frombytes("RGB", (40, 40), os.urandom(40 * 40 * 3))
    buffer = io.BytesIO()
    noisy.save(buffer, format="PNG")
    big = buffer.getvalue()
    assert len(big) > 1500
    refused = await _upload(client, pro.headers, big, "b.png")
    assert refused.status_code == 403
    body = refused.json()
    assert body["used_bytes"] == used and body["quota_bytes"] == 1500
    assert (await client.get("/api/v1/media", headers=pro.headers)).json()["count"] == 1


async def test_120_uploads_per_hour(client, pro):
    data = image_bytes("GIF", (1, 1))
    for n in range(120):
        response = await _upload(client, pro.headers, data, f"{n}.gif", "image/gif")
        assert response.status_code == 201, (n, response.text)
    refused = await _upload(client, pro.headers, data, "121.gif", "image/gif")
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    # Refused uploads are not counted; other workspaces are not affected.


async def test_delete_and_cross_workspace(client, pro, factory):
    other = await factory.workspace("pro")
    file = (await _upload(client, pro.headers, image_bytes("PNG"), "x.png")).json()["file"]
    foreign = await client.delete(f"/api/v1/media/{file['id']}", headers=other.headers)
    assert foreign.status_code == 404
    assert (await client.get(f"/media/{file['id']}")).status_code == 200
    assert (await client.delete("/api/v1/media/NOT-AN-ID", headers=pro.headers)).status_code == 404
    deleted = await client.delete(f"/api/v1/media/{file['id']}", headers=pro.headers)
    assert deleted.status_code == 200
    body = deleted.json()
    assert body["ok"] is True and body["id"] == file["id"] and body["note"]
    assert (await client.get(f"/media/{file['id']}")).status_code == 404
    assert (await client.get("/api/v1/media", headers=pro.headers)).json()["count"] == 0
    again = await client.delete(f"/api/v1/media/{file['id']}", headers=pro.headers)
    assert again.status_code == 404


async def test_bad_requests_and_permissions(client, pro, factory):
    not_multipart = await client.post("/api/v1/media", json={"file": "x"}, headers=pro.headers)
    assert not_multipart.status_code == 400
    no_file = await client.post(
        "/api/v1/media", files={"other": ("a.png", b"x")}, headers=pro.headers
    )
    assert no_file.status_code == 400
    assert no_file.json() == {"error": "file is required"}
    reader = await factory.workspace("pro", permissions="campaigns:read")
    refused = await _upload(client, reader.headers, image_bytes("PNG"), "a.png")
    assert refused.status_code == 403
    assert refused.json() == {"error": "Forbidden: campaigns:write permission required"}
    assert (await client.get("/api/v1/media", headers=reader.headers)).status_code == 200


async def test_hosting_off(client, pro, settings):
    settings.media_backend = "off"
    listing = await client.get("/api/v1/media", headers=pro.headers)
    assert listing.status_code == 200
    body = listing.json()
    assert body["configured"] is False and body["files"] == [] and body["count"] == 0
    refused = await _upload(client, pro.headers, image_bytes("PNG"), "a.png")
    assert refused.status_code == 503
    assert refused.json()["configured"] is False


async def test_s3_backend_with_moto_server(client, pro, settings):
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )
        s3.create_bucket(Bucket="mailroom-media")
        settings.media_backend = "s3"
        settings.s3_bucket = "mailroom-media"
        settings.s3_endpoint_url = endpoint
        settings.s3_access_key_id = "test"
        settings.s3_secret_access_key = "test"
        data = image_bytes("JPEG")
        response = await _upload(client, pro.headers, data, "photo.jpg", "image/jpeg")
        assert response.status_code == 201, response.text
        file = response.json()["file"]
        assert file["url"] == f"{endpoint}/mailroom-media/{file['id']}"
        async with httpx.AsyncClient() as outside:
            fetched = await outside.get(file["url"])
        assert fetched.status_code == 200 and fetched.content == data
        stored = s3.head_object(Bucket="mailroom-media", Key=file["id"])
        assert stored["ContentType"] == "image/jpeg"
        deleted = await client.delete(f"/api/v1/media/{file['id']}", headers=pro.headers)
        assert deleted.status_code == 200
        keys = s3.list_objects_v2(Bucket="mailroom-media").get("Contents", [])
        assert keys == []
    finally:
        server.stop()
