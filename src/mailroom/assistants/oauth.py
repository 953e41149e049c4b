"""Mailroom as an OAuth 2.1 authorization server for MCP clients (MCP authorization 2025-06-18).

The protocol (request parsing and validation, PKCE S256 verification, error shapes, dynamic
client registration, revocation) is the MCP SDK's `mcp.server.auth` handlers; chosen over
Authlib because they implement exactly MCP's profile on Starlette, which Mailroom serves,
where Authlib's server side needs a framework adapter written for it. Mailroom supplies the
storage (`OAuthAuthorizationServerProvider`), the policy (redirect URIs, resource, lifetimes,
reuse detection), the consent page (`assistants.consent`, `dashboard.consent_pages`) and the
metadata documents.
"""

from __future__ import annotations

import hmac
import html
import json
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from sqlalchemy import select, update
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp

from mailroom.assistants import service
from mailroom.assistants.consent import CONSENT_PATH
from mailroom.core.auth import PERMISSIONS
from mailroom.core.clock import utcnow
from mailroom.db import Database
from mailroom.models import Assistant, AssistantToken, OAuthClient, OAuthCode, OAuthRequest
from mailroom.ratelimits import service as ratelimits
from mailroom.settings import Settings

REQUEST_TTL = timedelta(minutes=15)
REGISTRATIONS_PER_HOUR = 20  # per client address
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
TOKEN_AUTH_METHODS = ("none", "client_secret_post")


def issuer(settings: Settings) -> str:
    return settings.public_url.rstrip("/")


def mcp_resource(settings: Settings) -> str:
    return f"{issuer(settings)}/mcp"


def authorization_server_metadata(settings: Settings) -> dict[str, Any]:
    base = issuer(settings)
    return {
        "issuer": base,
        "authorization_endpoint": f"{base}/oauth/authorize",
        "token_endpoint": f"{base}/oauth/token",
        "registration_endpoint": f"{base}/oauth/register",
        "revocation_endpoint": f"{base}/oauth/revoke",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": list(TOKEN_AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(TOKEN_AUTH_METHODS),
        "scopes_supported": list(PERMISSIONS),
    }


def protected_resource_metadata(settings: Settings) -> dict[str, Any]:
    return {
        "resource": mcp_resource(settings),
        "authorization_servers": [issuer(settings)],
        "scopes_supported": list(PERMISSIONS),
        "bearer_methods_supported": ["header"],
        "resource_name": "Mailroom",
    }


def redirect_uri_allowed(uri: str) -> bool:
    """https anywhere; http only back to this machine (native clients' loopback redirect)."""
    parts = urlsplit(uri)
    if parts.fragment:
        return False
    if parts.scheme == "https":
        return bool(parts.hostname)
    return parts.scheme == "http" and (parts.hostname or "") in LOOPBACK_HOSTS


def _client_info(row: OAuthClient) -> OAuthClientInformationFull:
    return OAuthClientInformationFull.model_validate(
        {**row.registration, "client_id": row.id, "client_secret": None}
    )


class Provider:
    """`OAuthAuthorizationServerProvider` over Mailroom's tables: each call one short
    transaction of its own (the SDK's handlers call them one by one)."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    # -------------------------------------------------------------- clients

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        async with self.db.session(write=False) as session:
            row = await session.get(OAuthClient, client_id[:36])
            return _client_info(row) if row is not None else None

    async def secret_hash(self, client_id: str) -> str | None:
        async with self.db.session(write=False) as session:
            return await session.scalar(
                select(OAuthClient.secret_hash).where(OAuthClient.id == client_id[:36])
            )

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        uris = [str(u) for u in client_info.redirect_uris or []]
        bad = next((u for u in uris if not redirect_uri_allowed(u)), None)
        if bad is not None:
            raise RegistrationError(
                "invalid_redirect_uri",
                f"redirect_uris must be https, or http to 127.0.0.1, [::1] or localhost: {bad}",
            )
        if client_info.token_endpoint_auth_method not in TOKEN_AUTH_METHODS:
            # The metadata advertises only these; a client_secret_basic one would be issued a
            # secret it could never present (the token endpoint reads the form).
            raise RegistrationError(
                "invalid_client_metadata",
                "token_endpoint_auth_method must be none or client_secret_post",
            )
        secret = client_info.client_secret
        registration = client_info.model_dump(
            mode="json", exclude={"client_id", "client_secret"}, exclude_none=True
        )
        async with self.db.transaction() as session:
            session.add(
                OAuthClient(
                    id=client_info.client_id,
                    client_name=(client_info.client_name or "")[:200],
                    registration=registration,
                    secret_hash=service.digest(secret) if secret else None,
                )
            )

    # -------------------------------------------------------------- authorization

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """The request is valid as OAuth: keep it and send the person to the consent page."""
        if params.resource is not None and params.resource.rstrip("/") != mcp_resource(
            self.settings
        ):
            raise AuthorizeError(
                "invalid_request", f"resource must be {mcp_resource(self.settings)}"
            )
        request_id = secrets.token_urlsafe(24)
        async with self.db.transaction() as session:
            session.add(
                OAuthRequest(
                    id=request_id,
                    client_id=client.client_id,
                    params=params.model_dump(mode="json"),
                    expires_at=utcnow() + REQUEST_TTL,
                )
            )
        return f"{issuer(self.settings)}{CONSENT_PATH}/{request_id}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        async with self.db.transaction() as session:
            row = await session.get(OAuthCode, service.digest(authorization_code))
            if row is None or row.client_id != client.client_id:
                return None
            if row.used_at is not None:
                # A code presented twice: the tokens it gave are revoked (RFC 6749 4.1.2).
                if row.assistant_id:
                    assistant = await session.get(Assistant, row.assistant_id)
                    if assistant is not None:
                        await service.revoke(session, assistant)
                return None
            return AuthorizationCode(
                code=authorization_code,
                scopes=list(row.permissions),
                expires_at=row.expires_at.timestamp(),
                client_id=row.client_id,
                code_challenge=row.code_challenge,
                redirect_uri=row.redirect_uri,
                redirect_uri_provided_explicitly=row.redirect_uri_explicit,
                resource=row.resource,
                subject=row.person_id,
            )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        code_hash = service.digest(authorization_code.code)
        async with self.db.transaction() as session:
            claimed = await session.execute(
                update(OAuthCode)
                .where(OAuthCode.code_hash == code_hash, OAuthCode.used_at.is_(None))
                .values(used_at=utcnow())
                .execution_options(synchronize_session=False)
            )
            row = await session.get(OAuthCode, code_hash)
            if not getattr(claimed, "rowcount", 0) or row is None:
                raise TokenError("invalid_grant", "authorization code does not exist")
            assistant = Assistant(
                workspace_id=row.workspace_id,
                name=row.name,
                kind="oauth",
                client_id=row.client_id,
                permissions=list(row.permissions),
                requires_approval=row.requires_approval,
                daily_recipient_budget=row.daily_recipient_budget,
                connected_by_person_id=row.person_id,
            )
            session.add(assistant)
            await session.flush()
            row.assistant_id = assistant.id
            pair = await service.issue_tokens(session, assistant)
        return OAuthToken.model_validate(pair.answer())

    # -------------------------------------------------------------- tokens

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        async with self.db.transaction() as session:
            found = await service.find_refresh(session, refresh_token, client_id=client.client_id)
            if found is None:
                return None
            return RefreshToken(
                token=refresh_token,
                client_id=client.client_id,
                scopes=list(found.assistant.permissions),
                expires_at=int(found.expires_at.timestamp()),
            )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        async with self.db.transaction() as session:
            found = await service.find_refresh(
                session, refresh_token.token, client_id=client.client_id
            )
            pair = await service.rotate(session, found) if found is not None else None
        # Refused after the commit: a reuse's revocation stays.
        if pair is None:
            raise TokenError("invalid_grant", "refresh token does not exist")
        return OAuthToken.model_validate(pair.answer())

    async def load_access_token(self, token: str) -> AccessToken | None:
        async with self.db.session(write=False) as session:
            row = (
                await session.execute(
                    select(AssistantToken.expires_at, Assistant)
                    .join(Assistant, Assistant.id == AssistantToken.assistant_id)
                    .where(
                        AssistantToken.token_hash == service.digest(token),
                        AssistantToken.kind == "access",
                    )
                )
            ).first()
        if row is None or row[1].revoked_at is not None or row[0] <= utcnow():
            return None
        expires_at, assistant = row
        return AccessToken(
            token=token,
            client_id=assistant.client_id or "",
            scopes=list(assistant.permissions),
            expires_at=int(expires_at.timestamp()),
            resource=mcp_resource(self.settings),
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        async with self.db.transaction() as session:
            await service.revoke_token(session, token.token, client_id=token.client_id or None)

    async def exchange_identity_assertion(self, *args: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "not supported")  # pragma: no cover


class HashedSecretAuthenticator(ClientAuthenticator):
    """The SDK's client check compares a stored plaintext secret; Mailroom keeps only its
    SHA-256, so confidential clients are checked here (public clients: `none`)."""

    def __init__(self, provider: Provider) -> None:
        super().__init__(provider)
        self.mailroom = provider

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        client_id = form.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise AuthenticationError("Missing client_id")
        client = await self.mailroom.get_client(client_id)
        if client is None:
            raise AuthenticationError("Invalid client_id")
        if client.token_endpoint_auth_method in (None, "none"):
            return client
        stored = await self.mailroom.secret_hash(client_id)
        sent = form.get("client_secret")
        if not stored or not isinstance(sent, str) or not sent:
            raise AuthenticationError("Client secret is required")
        if not hmac.compare_digest(service.digest(sent), stored):
            raise AuthenticationError("Invalid client_secret")
        return client


def _oauth_error(status: int, error: str, description: str, **headers: str) -> JSONResponse:
    return JSONResponse(
        {"error": error, "error_description": description},
        status_code=status,
        headers={"Cache-Control": "no-store", **headers},
    )


def _cors(app: ASGIApp, methods: list[str]) -> ASGIApp:
    """Browser-based MCP clients (the MCP Inspector) call these cross-origin."""
    return CORSMiddleware(
        app, allow_origins=["*"], allow_methods=methods, allow_headers=["mcp-protocol-version"]
    )


def build_routes(db: Database, settings: Settings) -> list[Route]:
    provider = Provider(db, settings)
    authenticator = HashedSecretAuthenticator(provider)
    authorize_handler = AuthorizationHandler(provider)
    token_handler = TokenHandler(provider, authenticator)
    registration_handler = RegistrationHandler(
        provider,
        options=ClientRegistrationOptions(
            enabled=True, valid_scopes=list(PERMISSIONS), default_scopes=list(PERMISSIONS)
        ),
    )

    async def resource_metadata(request: Request) -> Response:
        return JSONResponse(protected_resource_metadata(settings))

    async def server_metadata(request: Request) -> Response:
        return JSONResponse(authorization_server_metadata(settings))

    async def authorize(request: Request) -> Response:
        response = await authorize_handler.handle(request)
        if response.status_code == 400:
            # Nothing to redirect back to (unknown client or redirect URI): a page for the
            # person in the browser, never a redirect to an unregistered address.
            return _error_page(_description(bytes(response.body)))
        return response

    async def token(request: Request) -> Response:
        form = await request.form()
        if form.get("grant_type") == "refresh_token" and not form.get("client_id"):
            # A one-use grant's assistant has no OAuth client: its refresh token alone.
            refresh_token = form.get("refresh_token")
            if not isinstance(refresh_token, str) or not refresh_token:
                return _oauth_error(400, "invalid_request", "refresh_token is required")
            async with db.transaction() as session:
                pair = await service.refresh_grant_tokens(session, refresh_token)
            if pair is None:  # refused after the commit: a reuse's revocation stays
                return _oauth_error(400, "invalid_grant", "refresh token does not exist")
            return JSONResponse(pair.answer(), headers={"Cache-Control": "no-store"})
        return await token_handler.handle(request)

    async def register(request: Request) -> Response:
        address = request.client.host if request.client else "unknown"
        async with db.transaction() as session:
            decision = await ratelimits.hit(
                session,
                f"oauth-register:{address}",
                limit=REGISTRATIONS_PER_HOUR,
                window_seconds=3600,
            )
        if not decision.allowed:
            return _oauth_error(
                429,
                "invalid_request",
                f"Too many client registrations from this address. Retry in "
                f"{decision.retry_after} seconds.",
                **{"Retry-After": str(decision.retry_after)},
            )
        return await registration_handler.handle(request)

    async def revoke(request: Request) -> Response:
        """RFC 7009. Not the SDK's RevocationHandler: it demands a `client_secret` field
        even from public clients (400 without one), and knows no one-use grant's tokens,
        which have no client and are revoked by the token alone, as they are refreshed."""
        form = await request.form()
        client_id: str | None = None
        if form.get("client_id"):
            try:
                client_id = (await authenticator.authenticate_request(request)).client_id
            except AuthenticationError as refused:
                return _oauth_error(401, "invalid_client", refused.message)
        token = form.get("token")
        if not isinstance(token, str) or not token:
            return _oauth_error(400, "invalid_request", "token is required")
        async with db.transaction() as session:
            await service.revoke_token(session, token, client_id=client_id)
        return Response(status_code=200, headers={"Cache-Control": "no-store"})

    read = ["GET", "OPTIONS"]
    post = ["POST", "OPTIONS"]
    return [
        Route(
            "/.well-known/oauth-protected-resource/mcp",
            _cors(request_response(resource_metadata), read),
            methods=read,
        ),
        Route(
            "/.well-known/oauth-protected-resource",
            _cors(request_response(resource_metadata), read),
            methods=read,
        ),
        Route(
            "/.well-known/oauth-authorization-server",
            _cors(request_response(server_metadata), read),
            methods=read,
        ),
        # A plain endpoint: Route wraps it (wrapping it here too made every request a 500).
        Route("/oauth/authorize", authorize, methods=["GET", "POST"]),
        Route("/oauth/token", _cors(request_response(token), post), methods=post),
        Route("/oauth/register", _cors(request_response(register), post), methods=post),
        Route("/oauth/revoke", _cors(request_response(revoke), post), methods=post),
    ]


def _description(body: bytes) -> str:
    try:
        return str(json.loads(body).get("error_description") or "invalid request")
    except (ValueError, AttributeError):
        return "invalid request"


def _error_page(detail: str) -> HTMLResponse:
    text = html.escape(detail)
    return HTMLResponse(
        "<!doctype html><html lang=en><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        "<title>Connection request not valid · Mailroom</title>"
        "<body style='font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;"
        "padding:0 1rem'><h1>This connection request is not valid</h1>"
        "<p>The application that sent you here asked for something Mailroom cannot accept: "
        f"{text}.</p><p>Nothing was connected. Go back to the application and try again, "
        "or ask its maker.</p></body></html>",
        status_code=400,
        headers={"Cache-Control": "no-store"},
    )
