"""People: sign-in identities, one per address across the installation, made by the operator
(`mailroom admin create-user`) or by an admin's invitation, with a role in workspaces of any
number of accounts (`WorkspaceMember`). A workspace takes its account and plan from itself,
never from the person.

A person signs in with a password set from a one-time link, which names the person and their
current `link_nonce`; using it (or changing the password) draws a new nonce, so each link
works once. A link only ever goes to the person's own mailbox (or the operator's terminal):
inviting someone who already exists adds the role and notifies them, it never makes a link.
Messages never say whether an address has an account.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import unicodedata
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.accounts import service as accounts
from mailroom.core import tokens
from mailroom.core.auth import PERMISSIONS, Principal
from mailroom.core.clock import utcnow
from mailroom.core.emails import is_valid_email, normalize_email
from mailroom.core.errors import ApiError
from mailroom.core.plans import get_plan
from mailroom.core.text import fold
from mailroom.db import serialise
from mailroom.models import Account, Person, SendingSettings, Workspace, WorkspaceMember
from mailroom.people import passwords, totp
from mailroom.settings import Settings

ROLES = ("admin", "member")
LINK = "sign-in"  # token purpose
LINK_VALID_SECONDS = 72 * 3600
# What only a workspace admin reaches (the API's admin checks guard the same operations).
ADMIN_ONLY = frozenset({"webhooks:read", "webhooks:write", "audit:read"})


def limit_key(kind: str, *parts: str) -> str:
    """A rate-limit key for what a visitor typed (an address, a client): it fits its column
    whatever was typed, and the limits table keeps no address."""
    return f"{kind}:{hashlib.sha256(chr(0).join(parts).encode()).hexdigest()[:40]}"


def clean_email(value: str) -> str:
    email = normalize_email(value or "")
    if not is_valid_email(email) or len(email) > 254:
        raise ApiError(400, "email must be a valid email address")
    return email


def clean_role(value: str) -> str:
    if value not in ROLES:
        raise ApiError(400, "role must be admin or member")
    return value


async def create_person(
    session: AsyncSession,
    account_id: str,
    email: str,
    *,
    workspace_id: str | None = None,
    role: str = "member",
    name: str = "",
) -> Person:
    """A new person (the operator's command), with `role` in `workspace_id` when given, which
    must be a workspace of `account_id`. 409 when the address already has a person."""
    address = clean_email(email)
    role = clean_role(role)
    if await session.get(Account, account_id) is None:
        raise ApiError(404, "Account not found")
    if workspace_id is not None:
        workspace = await session.get(Workspace, workspace_id)
        if workspace is None or workspace.account_id != account_id:
            raise ApiError(404, "Workspace not found")
    if await by_email(session, address) is not None:
        raise ApiError(409, "A person with this email already exists")
    person = await _new_person(session, address, name)
    if workspace_id is not None:
        await set_role(session, person, workspace_id, role)
    return person


async def _new_person(session: AsyncSession, address: str, name: str = "") -> Person:
    person = Person(email=address, name=name[:200], link_nonce=secrets.token_hex(8))
    session.add(person)
    await session.flush()
    return person


async def set_role(session: AsyncSession, person: Person, workspace_id: str, role: str) -> None:
    """Give `person` `role` in the workspace (added, or changed as it stands: callers that
    may demote an admin use `change_role`, which keeps the last-admin rule)."""
    if await session.get(Workspace, workspace_id) is None:
        raise ApiError(404, "Workspace not found")
    member = await session.get(WorkspaceMember, (workspace_id, person.id))
    if member is None:
        session.add(WorkspaceMember(workspace_id=workspace_id, person_id=person.id, role=role))
    else:
        member.role = role
    await session.flush()


WORKSPACE_NAME_MAX = 100
PAUSED_ELSEWHERE = (
    "Sending is paused in “{name}” ({by}): a new workspace can be opened once it resumes."
)
PAUSED_BY = {"operator": "by the operator", "health": "for its delivery health"}


async def open_workspace(
    session: AsyncSession, person: Person, account_id: str, name: Any
) -> Workspace:
    """A new workspace in the account, with `person` its admin (the dashboard's "New
    workspace": its admin acts under the same account and plan). The name is required and, so
    the switcher tells them apart, not one the account's workspaces already have (compared as
    names are: case and inner whitespace ignored). Refused while the operator or the delivery
    health check has paused sending in a workspace of the account: a new workspace is no way
    around a pause."""
    # Invisible and control characters dropped: a name is what the switcher shows.
    visible = "".join(ch for ch in str(name or "") if unicodedata.category(ch) not in NOT_SHOWN)
    clean = " ".join(visible.split())
    if not clean:
        raise ApiError(400, "Name the workspace.")
    if len(clean) > WORKSPACE_NAME_MAX:
        raise ApiError(400, f"A workspace name can be up to {WORKSPACE_NAME_MAX} characters.")
    await serialise(session, f"workspace-names:{account_id}")  # check, then insert: one step
    rows = await session.execute(
        select(Workspace.id, Workspace.name, SendingSettings.paused_by)
        .outerjoin(SendingSettings, SendingSettings.workspace_id == Workspace.id)
        .where(Workspace.account_id == account_id)
        .order_by(Workspace.created_at, Workspace.id)
    )
    for workspace_id, existing, paused_by in rows.all():
        if paused_by in PAUSED_BY:
            shown = existing or f"Workspace {workspace_id[:8]}"  # as the switcher names it
            raise ApiError(403, PAUSED_ELSEWHERE.format(name=shown, by=PAUSED_BY[paused_by]))
        if fold(" ".join(existing.split())) == fold(clean):
            raise ApiError(409, f"This account already has a workspace named “{clean}”.")
    _account, workspace = await accounts.create_workspace(
        session, account_id=account_id, name=clean
    )
    await set_role(session, person, workspace.id, "admin")
    return workspace


# Unicode categories a name never shows: controls (NUL, tabs, ...), format characters
# (zero-width spaces and joiners, direction marks), unassigned and private-use code points.
NOT_SHOWN = frozenset({"Cc", "Cf", "Cn", "Co", "Cs"})


async def joined(session: AsyncSession, person_id: str, workspace_id: str | None) -> None:
    """The person has entered the workspace after signing in: no longer "invited" there."""
    if workspace_id is None:
        return
    await session.execute(
        update(WorkspaceMember)
        .where(
            WorkspaceMember.workspace_id == workspace_id,
            WorkspaceMember.person_id == person_id,
            WorkspaceMember.joined_at.is_(None),
        )
        .values(joined_at=utcnow())
    )


def sign_in_link(settings: Settings, person: Person) -> str:
    token = tokens.sign(
        settings.resolved_secret_key, LINK, person.id, person.link_nonce, str(int(time.time()))
    )
    return f"{settings.public_url.rstrip('/')}/app/link/{token}"


async def read_link(session: AsyncSession, settings: Settings, token: str) -> Person | None:
    """The person a sign-in link names while it is unused and fresh."""
    parts = tokens.read(settings.resolved_secret_key, LINK, token)
    if parts is None or len(parts) != 3 or not parts[2].isdecimal():
        return None
    if time.time() - int(parts[2]) > LINK_VALID_SECONDS:
        return None
    person = await session.get(Person, parts[0])
    if person is None or not secrets.compare_digest(person.link_nonce, parts[1]):
        return None
    return person


def set_password(person: Person, password: str) -> None:
    """400 with the reason when the password is refused. Earlier links stop working."""
    refused = passwords.problem(password, person.email)
    if refused:
        raise ApiError(400, refused)
    person.password_hash = passwords.hash_password(password)
    person.link_nonce = secrets.token_hex(8)


async def authenticate(session: AsyncSession, email: str, password: str) -> Person | None:
    """The person when the address and password match; the same time spent either way."""
    address = normalize_email(email or "")
    person = await session.scalar(select(Person).where(Person.email == address))
    if not passwords.verify(person.password_hash if person else None, password):
        return None
    assert person is not None
    if person.password_hash and passwords.needs_rehash(person.password_hash):
        person.password_hash = passwords.hash_password(password)
    return person


@dataclass(frozen=True)
class Membership:
    workspace_id: str
    name: str
    role: str


async def workspaces_of(session: AsyncSession, person: Person) -> list[Membership]:
    rows = await session.execute(
        select(Workspace.id, Workspace.name, WorkspaceMember.role)
        .join(WorkspaceMember, WorkspaceMember.workspace_id == Workspace.id)
        .where(WorkspaceMember.person_id == person.id)
        .order_by(Workspace.created_at, Workspace.id)
    )
    return [Membership(w, n or f"Workspace {w[:8]}", r) for w, n, r in rows.all()]


async def principal_for(session: AsyncSession, person: Person, workspace_id: str) -> Principal:
    """The person acting in one of their workspaces (404 for any other), under that
    workspace's account and plan: an admin holds every permission, a member all but the
    admin's."""
    row = (
        await session.execute(
            select(WorkspaceMember.role, Account.id, Account.plan)
            .join(Workspace, Workspace.id == WorkspaceMember.workspace_id)
            .join(Account, Account.id == Workspace.account_id)
            .where(
                WorkspaceMember.person_id == person.id,
                WorkspaceMember.workspace_id == workspace_id,
            )
        )
    ).first()
    if row is None:
        raise ApiError(404, "Workspace not found")
    role, account_id, plan = row
    granted = set(PERMISSIONS) if role == "admin" else set(PERMISSIONS) - ADMIN_ONLY
    return Principal(
        workspace_id=workspace_id,
        account_id=account_id,
        plan=get_plan(plan),
        permissions=frozenset(granted),
        person_id=person.id,
        role=role,
    )


# ---------------------------------------------------------------- the people of a workspace


@dataclass(frozen=True)
class Teammate:
    person_id: str
    email: str
    role: str
    since: Any
    # Entered this workspace since being added. Whether the person has a password, or signs
    # in elsewhere, is theirs: another account's admin is not told.
    joined: bool


async def people_of(session: AsyncSession, workspace_id: str) -> list[Teammate]:
    rows = await session.execute(
        select(
            Person.id,
            Person.email,
            WorkspaceMember.role,
            WorkspaceMember.created_at,
            WorkspaceMember.joined_at,
        )
        .join(WorkspaceMember, WorkspaceMember.person_id == Person.id)
        .where(WorkspaceMember.workspace_id == workspace_id)
        .order_by(Person.email)
    )
    return [Teammate(i, e, r, c, j is not None) for i, e, r, c, j in rows.all()]


@dataclass(frozen=True)
class Invitation:
    person: Person
    # Made by this invitation (no password yet): the only case that gets a sign-in link.
    new_person: bool
    # Already in this workspace: only the role changed, under the last-admin rule.
    was_member: bool


async def invite(session: AsyncSession, workspace_id: str, email: str, role: str) -> Invitation:
    """Give the address `role` in the workspace: a new person when nobody has it, else the
    existing person (of any account) gets the role, and a member of this workspace has their
    role changed as `change_role` would. What the caller tells the admin must not depend on
    which case it was (except a member's, whom the admin sees listed anyway)."""
    address = clean_email(email)
    role = clean_role(role)
    if await session.get(Workspace, workspace_id) is None:
        raise ApiError(404, "Workspace not found")
    person = await by_email(session, address)
    if person is None:
        try:
            async with session.begin_nested():  # two invitations of one new address at once
                person = await _new_person(session, address)
        except IntegrityError:
            person = await by_email(session, address)
            if person is None:
                raise
        else:
            await set_role(session, person, workspace_id, role)
            return Invitation(person, new_person=True, was_member=False)
    if await session.get(WorkspaceMember, (workspace_id, person.id)) is not None:
        await change_role(session, workspace_id, person.id, role)
        return Invitation(person, new_person=False, was_member=True)
    await set_role(session, person, workspace_id, role)
    return Invitation(person, new_person=False, was_member=False)


async def _admins(session: AsyncSession, workspace_id: str) -> int:
    found = await session.scalar(
        select(func.count()).where(
            WorkspaceMember.workspace_id == workspace_id, WorkspaceMember.role == "admin"
        )
    )
    return int(found or 0)


async def _member(session: AsyncSession, workspace_id: str, person_id: str) -> WorkspaceMember:
    member = await session.get(WorkspaceMember, (workspace_id, person_id))
    if member is None:
        raise ApiError(404, "Person not found")
    return member


async def change_role(session: AsyncSession, workspace_id: str, person_id: str, role: str) -> None:
    """409 when it would leave the workspace without an admin."""
    role = clean_role(role)
    await serialise(session, f"workspace-admins:{workspace_id}")
    member = await _member(session, workspace_id, person_id)
    if member.role == "admin" and role != "admin" and await _admins(session, workspace_id) <= 1:
        raise ApiError(409, "A workspace needs at least one admin.")
    member.role = role


async def remove(session: AsyncSession, workspace_id: str, person_id: str) -> None:
    """The person leaves this workspace (their sessions here end with the membership)."""
    await serialise(session, f"workspace-admins:{workspace_id}")
    member = await _member(session, workspace_id, person_id)
    if member.role == "admin" and await _admins(session, workspace_id) <= 1:
        raise ApiError(409, "A workspace needs at least one admin.")
    await session.delete(member)
    await session.flush()


async def by_email(session: AsyncSession, email: str) -> Person | None:
    found: Person | None = await session.scalar(
        select(Person).where(Person.email == normalize_email(email or ""))
    )
    return found


# ---------------------------------------------------------------- the second factor

SETUP = "totp-setup"  # token purpose: a secret offered, not yet confirmed
SETUP_VALID_SECONDS = 3600
WRONG_CODE = "That code is not right. Use the current code from your app."


def totp_setup(settings: Settings, person: Person) -> tuple[str, str]:
    """(a new secret to show, the signed token that carries it to the confirmation): nothing
    is stored until a code from the app proves it was saved."""
    secret = totp.new_secret()
    token = tokens.sign(
        settings.resolved_secret_key, SETUP, person.id, secret, str(int(time.time()))
    )
    return secret, token


def setup_secret(settings: Settings, person: Person, token: str) -> str | None:
    parts = tokens.read(settings.resolved_secret_key, SETUP, token)
    if parts is None or len(parts) != 3 or parts[0] != person.id or not parts[2].isdecimal():
        return None
    if time.time() - int(parts[2]) > SETUP_VALID_SECONDS:
        return None
    return parts[1]


def confirm_totp(settings: Settings, person: Person, token: str, code: str) -> list[str]:
    """Turn the second factor on; the recovery codes, to show once. 400 on a wrong code."""
    secret = setup_secret(settings, person, token)
    if secret is None:
        raise ApiError(400, "This set-up has expired. Start again.")
    step = totp.matching_step(secret, code)
    if step is None:
        raise ApiError(400, WRONG_CODE)
    codes = totp.recovery_codes()
    person.totp_sealed = totp.seal(settings.resolved_secret_key, person.id, secret)
    person.totp_last_step = step
    person.recovery_hashes = [totp.recovery_hash(c) for c in codes]
    return codes


def second_factor_passes(settings: Settings, person: Person, code: str) -> bool:
    """A current code from the app (each works once) or an unused recovery code (used up)."""
    if not person.totp_sealed:
        return True
    secret = totp.unseal(settings.resolved_secret_key, person.id, person.totp_sealed)
    if secret is not None:
        step = totp.matching_step(secret, code, after=person.totp_last_step)
        if step is not None:
            person.totp_last_step = step
            return True
    digest = totp.recovery_hash(code)
    if digest in (person.recovery_hashes or []):
        person.recovery_hashes = [h for h in person.recovery_hashes if h != digest]
        return True
    return False


def disable_totp(settings: Settings, person: Person, code: str) -> None:
    if not second_factor_passes(settings, person, code):
        raise ApiError(400, WRONG_CODE)
    person.totp_sealed, person.recovery_hashes, person.totp_last_step = None, [], -1
