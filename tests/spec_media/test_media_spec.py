"""Black-box checks of hosted images against the spec ("Hosted image (MediaFile)", "Media
(hosted images)", "Errors", "Limits", "Authentication" 8) and issue 6, as a new user tries them."""

from __future__ import annotations

import dataclasses
import io
import os
import re
from datetime import datetime, timedelta

import pytest
from PIL import Image

from mailroom.core import plans

ID_PATTERN = re.compile(r"^[a-z0-9]{8,40}\.(png|jpg|gif|webp)$")
MB2 = 2 * 1024 * 1024
MEDIA_KEYS = {"id", "url", "name", "size", "type", "uploaded"}
LIBRARY_KEYS = {
    "configured",
    "files",
    "count",
    "used_bytes",
    "quota_bytes",
    "max_bytes",
    "types",
    "truncated",
}
KINDS = [
    ("PNG", "png", "image/png"),
    ("JPEG", "jpg", "image/jpeg"),
    ("GIF", "gif", "image/gif"),
    ("WEBP", "webp", "image/webp"),
]


def image_bytes(kind: str = "PNG", size: tuple[int, int] = (4, 4)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (10, 120, 200)).save(buffer, format=kind)
    return buffer.getvalue()


def noisy_png(side: int) -> bytes:
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(buffer, format="PNG")
    return buffer.getvalue()


async def upload(client, headers, data: bytes, name: str = "a.png", declared: str = "image/png"):
    return await client.post(
        "/api/v1/media", files={"file": (name, data, declared)}, headers=headers
    )


def path_of(url: str) -> str:
    assert url.startswith("http://testserver/"), url
    return url.removeprefix("http://testserver")


def parse_ts(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert parsed.tzinfo is not None, value
    return parsed


# --- MediaFile fields and the library shape -------------------------------------------------


@pytest.mark.parametrize(("kind", "ext", "mime"), KINDS)
async def test_upload_answer_has_exactly_the_mediafile_fields(client, ws, kind, ext, mime):
    data = image_bytes(kind)
    response = await upload(client, ws.headers, data, f"My Picture.{ext}", mime)
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"file", "used_bytes", "quota_bytes"}
    file = body["file"]
    assert set(file) == MEDIA_KEYS
    assert ID_PATTERN.match(file["id"]) and file["id"].endswith(f".{ext}")
    assert file["url"].startswith("http://testserver/") and file["url"].endswith(file["id"])
    assert file["name"] == f"My Picture.{ext}"
    assert file["size"] == len(data) and isinstance(file["size"], int)
    assert file["type"] == mime
    parse_ts(file["uploaded"])
    assert isinstance(body["used_bytes"], int) and isinstance(body["quota_bytes"], int)
    assert body["used_bytes"] == len(data)


async def test_list_entries_equal_the_upload_answers(client, ws):
    answers = []
    for kind, ext, mime in KINDS:
        made = await upload(client, ws.headers, image_bytes(kind), f"x.{ext}", mime)
        assert made.status_code == 201
        answers.append(made.json()["file"])
    body = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert set(body) == LIBRARY_KEYS
    assert body["files"] == list(reversed(answers))  # newest first, same fields and values
    assert len({f["id"] for f in body["files"]}) == 4
    uploaded = [parse_ts(f["uploaded"]) for f in body["files"]]
    assert uploaded == sorted(uploaded, reverse=True)


async def test_empty_library_shape(client, ws):
    response = await client.get("/api/v1/media", headers=ws.headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == LIBRARY_KEYS
    assert body["configured"] is True
    assert body["files"] == [] and body["count"] == 0 and body["used_bytes"] == 0
    assert body["truncated"] is False
    assert body["max_bytes"] == MB2
    assert set(body["types"]) == {"image/png", "image/jpeg", "image/gif", "image/webp"}
    assert isinstance(body["quota_bytes"], int) and body["quota_bytes"] > 0


async def test_storage_quota_is_per_plan_and_grows_with_the_plan(client, factory):
    quotas = []
    for plan in ("free", "starter", "pro", "business"):
        workspace = await factory.workspace(plan, listen=False)
        body = (await client.get("/api/v1/media", headers=workspace.headers)).json()
        assert body["quota_bytes"] == plans.PLANS[plan].media_quota_bytes
        quotas.append(body["quota_bytes"])
    assert quotas == sorted(quotas) and len(set(quotas)) == 4
    assert quotas[0] >= MB2  # even Free can hold one full-size image


async def test_newest_first_after_a_delete_in_the_middle(client, ws):
    ids = []
    for n in range(4):
        made = await upload(client, ws.headers, image_bytes("PNG", (n + 1, 3)), f"{n}.png")
        ids.append(made.json()["file"]["id"])
    assert (await client.delete(f"/api/v1/media/{ids[1]}", headers=ws.headers)).status_code == 200
    body = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert [f["id"] for f in body["files"]] == [ids[3], ids[2], ids[0]]
    assert body["count"] == 3
    assert body["used_bytes"] == sum(f["size"] for f in body["files"])


async def test_truncated_when_more_files_exist_than_are_listed(client, ws, db):
    from mailroom.models import MediaFile

    start = datetime(2026, 1, 1, 12, 0, 0)
    async with db.transaction() as session:
        for n in range(501):
            media_id = f"bulk{n:06d}.png"
            session.add(
                MediaFile(
                    id=media_id,
                    workspace_id=ws.workspace_id,
                    name=f"{n}.png",
                    size=10,
                    type="image/png",
                    storage_key=media_id,
                    created_at=start + timedelta(seconds=n),
                )
            )
    body = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert body["count"] == 501
    assert body["used_bytes"] == 5010
    assert body["truncated"] is True
    assert 0 < len(body["files"]) < 501
    assert body["files"][0]["id"] == "bulk000500.png"  # newest first


async def test_unicode_name_is_kept(client, ws):
    made = await upload(client, ws.headers, image_bytes("PNG"), "café – été.png")
    assert made.status_code == 201
    assert made.json()["file"]["name"] == "café – été.png"


async def test_a_workspace_sees_only_its_own_images(client, ws, factory):
    other = await factory.workspace("pro", listen=False)
    await upload(client, ws.headers, image_bytes("PNG"), "mine.png")
    body = (await client.get("/api/v1/media", headers=other.headers)).json()
    assert body["files"] == [] and body["count"] == 0 and body["used_bytes"] == 0


# --- 400 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_kwargs",
    [
        pytest.param({"json": {"file": "aGVsbG8="}}, id="json"),
        pytest.param({"data": {"file": "x"}}, id="urlencoded"),
        pytest.param(
            {"content": image_bytes("PNG"), "headers": {"content-type": "image/png"}},
            id="raw-image-body",
        ),
        pytest.param({"content": b""}, id="no-body"),
        pytest.param({"files": {"image": ("a.png", image_bytes("PNG"), "image/png")}}, id="other"),
        pytest.param({"files": {"upload": ("a.png", b"x")}}, id="other-field-name"),
        pytest.param({"files": {"file": (None, b"not a file part")}}, id="file-as-text-field"),
    ],
)
async def test_no_file_field_or_not_multipart_is_400(client, ws, request_kwargs):
    kwargs = dict(request_kwargs)
    headers = {**ws.headers, **kwargs.pop("headers", {})}
    response = await client.post("/api/v1/media", headers=headers, **kwargs)
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"], str)
    assert "file" in body["error"] or "multipart" in body["error"].lower()
    assert (await client.get("/api/v1/media", headers=ws.headers)).json()["count"] == 0


async def test_broken_multipart_is_400_not_500(client, ws):
    response = await client.post(
        "/api/v1/media",
        content=b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a',
        headers={**ws.headers, "content-type": "multipart/form-data; boundary=xyz"},
    )
    assert response.status_code == 400, response.text
    assert set(response.json()) == {"error"}


# --- 413 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "ext", "mime"), KINDS)
async def test_exactly_2_mb_accepted_one_byte_more_is_413(client, ws, kind, ext, mime):
    head = image_bytes(kind)
    exactly = head + b"\0" * (MB2 - len(head))
    over = exactly + b"\0"
    refused = await upload(client, ws.headers, over, f"big.{ext}", mime)
    assert refused.status_code == 413, refused.text
    assert set(refused.json()) == {"error"}
    accepted = await upload(client, ws.headers, exactly, f"max.{ext}", mime)
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["file"]["size"] == MB2
    body = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert body["count"] == 1 and body["used_bytes"] == MB2


async def test_much_larger_upload_is_413(client, ws):
    data = image_bytes("PNG") + b"\0" * (6 * 1024 * 1024)
    response = await upload(client, ws.headers, data, "huge.png")
    assert response.status_code == 413
    assert "2 MB" in response.json()["error"]


async def test_streamed_body_without_length_is_cut_off_at_413(client, ws):
    """No Content-Length (chunked): the server must count what arrives and stop with 413."""
    boundary = "spectestboundary"
    head = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="stream.png"\r\n'
        "Content-Type: image/png\r\n\r\n"
    ).encode() + image_bytes("PNG")
    sent = 0

    async def body():
        nonlocal sent
        yield head
        chunk = b"\0" * (256 * 1024)
        for _ in range(64):  # 16 MB if read to the end
            sent += len(chunk)
            yield chunk
        yield f"\r\n--{boundary}--\r\n".encode()

    response = await client.post(
        "/api/v1/media",
        content=body(),
        headers={**ws.headers, "content-type": f"multipart/form-data; boundary={boundary}"},
    )
    assert response.status_code == 413, response.text
    assert (await client.get("/api/v1/media", headers=ws.headers)).json()["count"] == 0


# --- 415 ---------------------------------------------------------------------------------


def _other_format(kind: str) -> bytes:
    return image_bytes(kind)


@pytest.mark.parametrize(
    ("data", "name", "declared"),
    [
        pytest.param(
            b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>',
            "logo.svg",
            "image/svg+xml",
            id="svg",
        ),
        pytest.param(
            b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>',
            "logo.png",
            "image/png",
            id="svg-named-png",
        ),
        pytest.param(b"hello, I am text", "notes.png", "image/png", id="text-named-png"),
        pytest.param(b"<html><body>x</body></html>", "page.gif", "image/gif", id="html"),
        pytest.param(b"", "empty.png", "image/png", id="empty-file"),
        pytest.param(b"\x89PNG", "short.png", "image/png", id="png-signature-cut"),
        pytest.param(b"\x89PNG\r\n", "short2.png", "image/png", id="png-signature-cut-2"),
        pytest.param(b"\xff\xd8", "short.jpg", "image/jpeg", id="jpeg-signature-cut"),
        pytest.param(b"GIF8", "short.gif", "image/gif", id="gif-signature-cut"),
        pytest.param(b"GIF90a" + b"\0" * 20, "bad.gif", "image/gif", id="gif-bad-version"),
        pytest.param(b"RIFF\x10\x00\x00\x00WEB", "short.webp", "image/webp", id="webp-cut"),
        pytest.param(
            b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\0" * 24, "sound.webp", "image/webp", id="wav"
        ),
        pytest.param(_other_format("BMP"), "pic.png", "image/png", id="bmp"),
        pytest.param(_other_format("TIFF"), "pic.jpg", "image/jpeg", id="tiff"),
        pytest.param(_other_format("ICO"), "favicon.png", "image/png", id="ico"),
        pytest.param(b"%PDF-1.7\n%\xe2\xe3", "doc.png", "image/png", id="pdf"),
        pytest.param(b"PK\x03\x04" + b"\0" * 30, "a.png", "image/png", id="zip"),
        pytest.param(b"  \x89PNG\r\n\x1a\n" + b"\0" * 30, "lead.png", "image/png", id="leading"),
    ],
)
async def test_anything_but_png_jpeg_gif_webp_is_415(client, ws, data, name, declared):
    response = await upload(client, ws.headers, data, name, declared)
    assert response.status_code == 415, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]
    listing = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert listing["count"] == 0 and listing["used_bytes"] == 0


@pytest.mark.parametrize(("kind", "ext", "mime"), KINDS)
async def test_declared_type_and_name_are_ignored(client, ws, kind, ext, mime):
    data = image_bytes(kind)
    response = await upload(client, ws.headers, data, "upload.svg", "image/svg+xml")
    assert response.status_code == 201, response.text
    file = response.json()["file"]
    assert file["type"] == mime and file["id"].endswith(f".{ext}")
    served = await client.get(path_of(file["url"]))
    assert served.headers["content-type"] == mime


async def test_no_declared_type_is_fine(client, ws):
    data = image_bytes("GIF")
    response = await client.post(
        "/api/v1/media", files={"file": ("noext", data)}, headers=ws.headers
    )
    assert response.status_code == 201, response.text
    assert response.json()["file"]["type"] == "image/gif"


# --- permissions and keys ---------------------------------------------------------------


async def test_permissions_follow_campaigns_read_and_write(client, ws, factory):
    file = (await upload(client, ws.headers, image_bytes("PNG"))).json()["file"]
    reader = await factory.key(ws, "campaigns:read")
    writer_only = await factory.key(ws, "campaigns:write")
    unrelated = await factory.key(
        ws, ["contacts:read", "contacts:write", "templates:write", "campaigns:send"]
    )
    read_needed = {"error": "Forbidden: campaigns:read permission required"}
    write_needed = {"error": "Forbidden: campaigns:write permission required"}

    assert (await client.get("/api/v1/media", headers=reader)).status_code == 200
    refused = await upload(client, reader, image_bytes("PNG"))
    assert (refused.status_code, refused.json()) == (403, write_needed)
    refused = await client.delete(f"/api/v1/media/{file['id']}", headers=reader)
    assert (refused.status_code, refused.json()) == (403, write_needed)

    refused = await client.get("/api/v1/media", headers=unrelated)
    assert (refused.status_code, refused.json()) == (403, read_needed)
    refused = await upload(client, unrelated, image_bytes("PNG"))
    assert (refused.status_code, refused.json()) == (403, write_needed)
    refused = await client.delete(f"/api/v1/media/{file['id']}", headers=unrelated)
    assert (refused.status_code, refused.json()) == (403, write_needed)

    refused = await client.get("/api/v1/media", headers=writer_only)
    assert (refused.status_code, refused.json()) == (403, read_needed)
    assert (await upload(client, writer_only, image_bytes("GIF"), "g.gif")).status_code == 201

    still = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert file["id"] in [f["id"] for f in still["files"]] and still["count"] == 2


async def test_permission_is_checked_before_the_body(client, ws, factory):
    reader = await factory.key(ws, "campaigns:read")
    for kwargs in ({"json": {"x": 1}}, {"content": b""}):
        response = await client.post("/api/v1/media", headers=reader, **kwargs)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: campaigns:write permission required"}


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing"),
        pytest.param({"x-api-key": ""}, id="empty"),
        pytest.param({"x-api-key": "mr_live_nope"}, id="malformed"),
        pytest.param({"x-api-key": "mr_live_abcdefgh_" + "a" * 32}, id="unknown"),
        pytest.param({"authorization": "Bearer mr_live_abcdefgh_" + "a" * 32}, id="bearer"),
    ],
)
async def test_bad_key_is_401_on_every_media_route(client, ws, headers):
    file = (await upload(client, ws.headers, image_bytes("PNG"))).json()["file"]
    answers = [
        await client.get("/api/v1/media", headers=headers),
        await upload(client, headers, image_bytes("PNG")),
        await client.delete(f"/api/v1/media/{file['id']}", headers=headers),
    ]
    for answer in answers:
        assert answer.status_code == 401
        assert answer.json() == {"error": "Unauthorized"}
    assert (await client.get("/api/v1/media", headers=ws.headers)).json()["count"] == 1


async def test_revoked_key_is_401(client, ws, factory, db):
    from mailroom.accounts import service as accounts_service

    headers = await factory.key(ws, "all")
    assert (await client.get("/api/v1/media", headers=headers)).status_code == 200
    async with db.transaction() as session:
        check = await accounts_service.authenticate_key(session, headers["x-api-key"])
        await accounts_service.revoke_key(session, check.principal.key_id)
    refused = await upload(client, headers, image_bytes("PNG"))
    assert (refused.status_code, refused.json()) == (401, {"error": "Unauthorized"})


# --- DELETE ------------------------------------------------------------------------------


async def test_delete_answer_and_effects(client, ws):
    data = image_bytes("WEBP")
    file = (await upload(client, ws.headers, data, "w.webp", "image/webp")).json()["file"]
    before = (await client.get("/api/v1/media", headers=ws.headers)).json()["used_bytes"]
    response = await client.delete(f"/api/v1/media/{file['id']}", headers=ws.headers)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"ok", "id", "note"}
    assert body["ok"] is True and body["id"] == file["id"]
    assert isinstance(body["note"], str) and body["note"]
    after = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert after["used_bytes"] == before - len(data) and after["count"] == 0
    assert (await client.get(path_of(file["url"]))).status_code == 404


@pytest.mark.parametrize(
    "media_id",
    [
        "abcdefgh.png",  # well formed, never uploaded
        "0123456789abcdefghij0123456789abcdefghij.webp",  # 40 characters, never uploaded
    ],
)
async def test_delete_of_an_unknown_well_formed_id_is_404(client, ws, media_id):
    assert ID_PATTERN.match(media_id)
    response = await client.delete(f"/api/v1/media/{media_id}", headers=ws.headers)
    assert response.status_code == 404
    assert set(response.json()) == {"error"}


@pytest.mark.parametrize(
    "media_id",
    [
        "ABCDEFGHIJ.png",  # upper case
        "abc.png",  # too short
        "a" * 41 + ".png",  # too long
        "abcdefghij.svg",  # not an allowed extension
        "abcdefghij.jpeg",  # jpeg spelt long
        "abcdefghij",  # no extension
        "abcd_efghij.png",  # underscore
    ],
)
async def test_delete_with_an_id_off_the_pattern_is_refused_cleanly(client, ws, media_id):
    """The spec fixes the pattern but not the status for an id off it (400 or 404)."""
    assert not ID_PATTERN.match(media_id)
    response = await client.delete(f"/api/v1/media/{media_id}", headers=ws.headers)
    assert response.status_code in (400, 404), response.text
    assert set(response.json()) == {"error"}


async def test_delete_with_a_variant_of_a_real_id_does_not_touch_it(client, ws):
    file = (await upload(client, ws.headers, image_bytes("PNG"))).json()["file"]
    stem = file["id"].removesuffix(".png")
    for variant in (file["id"].upper(), f"{stem}.jpg", f"{stem}.PNG", f"{stem}", f" {file['id']}"):
        response = await client.delete(f"/api/v1/media/{variant}", headers=ws.headers)
        assert response.status_code in (400, 404), variant
    assert (await client.get(path_of(file["url"]))).status_code == 200
    assert (await client.get("/api/v1/media", headers=ws.headers)).json()["count"] == 1


async def test_foreign_id_is_404_and_leaves_the_owner_untouched(client, ws, factory):
    other = await factory.workspace("pro", listen=False)
    data = image_bytes("JPEG")
    file = (await upload(client, ws.headers, data, "a.jpg", "image/jpeg")).json()["file"]
    refused = await client.delete(f"/api/v1/media/{file['id']}", headers=other.headers)
    assert refused.status_code == 404
    assert set(refused.json()) == {"error"}
    owner = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert [f["id"] for f in owner["files"]] == [file["id"]]
    assert (await client.get(path_of(file["url"]))).content == data


async def test_same_bytes_twice_are_two_files(client, ws):
    data = image_bytes("PNG")
    first = (await upload(client, ws.headers, data)).json()
    second = (await upload(client, ws.headers, data)).json()
    assert first["file"]["id"] != second["file"]["id"]
    assert second["used_bytes"] == 2 * len(data)
    await client.delete(f"/api/v1/media/{first['file']['id']}", headers=ws.headers)
    assert (await client.get(path_of(second["file"]["url"]))).content == data


# --- the public URL ----------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "ext", "mime"), KINDS)
async def test_public_url_serves_the_bytes_with_safe_headers(client, ws, kind, ext, mime):
    data = image_bytes(kind, (9, 7))
    file = (await upload(client, ws.headers, data, f"p.{ext}", "application/octet-stream")).json()
    url = file["file"]["url"]
    served = await client.get(path_of(url))  # no key: a public address for email clients
    assert served.status_code == 200
    assert served.content == data
    assert served.headers["content-type"] == mime
    assert served.headers["x-content-type-options"] == "nosniff"
    cache = served.headers["cache-control"]
    assert "public" in cache and "no-store" not in cache and "no-cache" not in cache
    max_age = int(re.search(r"max-age=(\d+)", cache).group(1))
    assert max_age >= 30 * 24 * 3600
    assert served.headers.get("set-cookie") is None


async def test_public_url_keeps_working_with_no_key_and_other_workspaces(client, ws, factory):
    data = image_bytes("GIF")
    file = (await upload(client, ws.headers, data, "a.gif", "image/gif")).json()["file"]
    other = await factory.workspace("pro", listen=False)
    for headers in ({}, other.headers, {"x-api-key": "mr_live_nope"}):
        served = await client.get(path_of(file["url"]), headers=headers)
        assert served.status_code == 200 and served.content == data


@pytest.mark.parametrize(
    "path",
    [
        "/media/abcdefghij.png",
        "/media/NOPE",
        "/media/..%2F..%2Fetc%2Fpasswd",
        "/media/abcdefghij.part",
    ],
)
async def test_public_url_for_nothing_is_404(client, ws, path):
    await upload(client, ws.headers, image_bytes("PNG"))
    response = await client.get(path)
    assert response.status_code == 404


async def test_public_url_with_another_extension_is_404(client, ws):
    file = (await upload(client, ws.headers, image_bytes("PNG"))).json()["file"]
    stem = file["id"].removesuffix(".png")
    for variant in (f"{stem}.jpg", f"{stem}.gif", file["id"].upper()):
        assert (await client.get(f"/media/{variant}")).status_code == 404, variant


# --- quota, upload rate, write throughput ------------------------------------------------


async def test_quota_boundary_and_403_body(client, ws, monkeypatch):
    first_data = noisy_png(12)
    second_data = noisy_png(14)
    quota = len(first_data) + len(second_data)
    monkeypatch.setitem(
        plans.PLANS, "pro", dataclasses.replace(plans.PLANS["pro"], media_quota_bytes=quota)
    )
    first = await upload(client, ws.headers, first_data, "1.png")
    assert first.status_code == 201
    assert first.json()["quota_bytes"] == quota
    second = await upload(client, ws.headers, second_data, "2.png")
    assert second.status_code == 201, second.text  # exactly filling the quota is allowed
    assert second.json()["used_bytes"] == quota

    refused = await upload(client, ws.headers, image_bytes("GIF", (1, 1)), "3.gif", "image/gif")
    assert refused.status_code == 403
    body = refused.json()
    assert set(body) == {"error", "used_bytes", "quota_bytes"}
    assert isinstance(body["error"], str) and body["error"]
    assert body["used_bytes"] == quota and body["quota_bytes"] == quota
    listing = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert listing["count"] == 2 and listing["quota_bytes"] == quota

    # Deleting frees the space again.
    await client.delete(f"/api/v1/media/{first.json()['file']['id']}", headers=ws.headers)
    again = await upload(client, ws.headers, image_bytes("GIF", (1, 1)), "3.gif", "image/gif")
    assert again.status_code == 201, again.text


async def test_quota_is_per_workspace(client, ws, factory, monkeypatch):
    data = noisy_png(12)
    monkeypatch.setitem(
        plans.PLANS, "pro", dataclasses.replace(plans.PLANS["pro"], media_quota_bytes=len(data))
    )
    other = await factory.workspace("pro", listen=False)
    assert (await upload(client, ws.headers, data)).status_code == 201
    assert (await upload(client, other.headers, data)).status_code == 201
    assert (await upload(client, ws.headers, data)).status_code == 403


async def test_upload_rate_is_per_workspace_and_counts_uploads_only(client, ws, factory):
    gif = image_bytes("GIF", (1, 1))
    for _ in range(3):  # refused uploads are not uploads
        assert (await upload(client, ws.headers, b"text", "t.png")).status_code == 415
    ids = []
    for n in range(120):
        made = await upload(client, ws.headers, gif, f"{n}.gif", "image/gif")
        assert made.status_code == 201, (n, made.text)
        ids.append(made.json()["file"]["id"])
    refused = await upload(client, ws.headers, gif, "121.gif", "image/gif")
    assert refused.status_code == 429
    assert set(refused.json()) == {"error"}
    retry_after = int(refused.headers["retry-after"])
    assert 1 <= retry_after <= 3600

    # Deleting an image does not give an upload back; reads and deletes still work.
    deleted = await client.delete(f"/api/v1/media/{ids[0]}", headers=ws.headers)
    assert deleted.status_code == 200
    assert (await upload(client, ws.headers, gif, "x.gif", "image/gif")).status_code == 429
    assert (await client.get("/api/v1/media", headers=ws.headers)).json()["count"] == 119

    other = await factory.workspace("pro", listen=False)
    assert (await upload(client, other.headers, gif, "o.gif", "image/gif")).status_code == 201

    # Another workspace of the same account has its own allowance too.
    sibling = await factory.workspace(account_id=ws.account_id, listen=False)
    assert (await upload(client, sibling.headers, gif, "s.gif", "image/gif")).status_code == 201


async def test_upload_counts_as_a_write_on_a_metered_plan(client, factory):
    free = await factory.workspace("free", listen=False)
    for n in range(120):
        made = await client.post("/api/v1/tags", json={"name": f"t{n}"}, headers=free.headers)
        assert made.status_code == 201
    refused = await upload(client, free.headers, image_bytes("PNG"))
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    listing = await client.get("/api/v1/media", headers=free.headers)  # reads unmetered
    assert listing.status_code == 200 and listing.json()["count"] == 0


# --- hosting off / store unavailable -----------------------------------------------------


async def test_hosting_off_every_route(client, ws, settings):
    data = image_bytes("PNG")
    file = (await upload(client, ws.headers, data)).json()["file"]
    settings.media_backend = "off"

    listing = await client.get("/api/v1/media", headers=ws.headers)
    assert listing.status_code == 200
    body = listing.json()
    assert set(body) == LIBRARY_KEYS
    assert body["configured"] is False and body["files"] == [] and body["count"] == 0

    refused = await upload(client, ws.headers, data)
    assert refused.status_code == 503
    assert refused.json()["configured"] is False and isinstance(refused.json()["error"], str)

    refused = await client.delete(f"/api/v1/media/{file['id']}", headers=ws.headers)
    assert refused.status_code == 503, refused.text
    assert refused.json()["configured"] is False

    settings.media_backend = "local"
    listing = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert [f["id"] for f in listing["files"]] == [file["id"]]


async def test_store_unavailable_is_503_and_keeps_nothing(client, ws, settings, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_bytes(b"x")
    settings.media_dir = blocker / "media"
    refused = await upload(client, ws.headers, image_bytes("PNG"))
    assert refused.status_code == 503, refused.text
    assert isinstance(refused.json()["error"], str)
    listing = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert listing["count"] == 0 and listing["used_bytes"] == 0


# --- hand-written minimal files, concurrency -----------------------------------------------

MINIMAL_GIF87 = (
    b"GIF87a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff,"
    b"\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)


async def test_hand_written_gif87a_is_a_gif(client, ws):
    response = await upload(client, ws.headers, MINIMAL_GIF87, "tiny.bin", "text/plain")
    assert response.status_code == 201, response.text
    file = response.json()["file"]
    assert file["type"] == "image/gif" and file["size"] == len(MINIMAL_GIF87)
    assert (await client.get(path_of(file["url"]))).content == MINIMAL_GIF87


async def test_concurrent_uploads_never_overrun_the_quota(client, ws, monkeypatch):
    import asyncio

    images = [noisy_png(16) for _ in range(6)]
    quota = max(len(i) for i in images) * 2 + 10  # room for two images, never three
    monkeypatch.setitem(
        plans.PLANS, "pro", dataclasses.replace(plans.PLANS["pro"], media_quota_bytes=quota)
    )
    answers = await asyncio.gather(
        *(upload(client, ws.headers, data, f"{n}.png") for n, data in enumerate(images))
    )
    statuses = sorted(a.status_code for a in answers)
    assert set(statuses) <= {201, 403}, [a.text for a in answers]
    listing = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert listing["used_bytes"] <= quota, statuses
    assert listing["count"] == statuses.count(201) == 2
