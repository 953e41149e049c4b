"""Reading a form for its public page and its submissions in one statement.

The statement reads the form (fresh: a change or a delete shows at once), its workspace's
account (the plan, for the principal) and a version of what the form depends on: the
workspace's lists and custom fields (count and latest `updated_at`), and whether it has any
enabled webhook endpoint or active automation. The lists and the custom-field registry are
kept in this process per form while that version holds (every create and change of a list or
a field sets its `updated_at`, a delete changes the count), and at most `TTL_SECONDS` in any
case (a backstop against clocks of several hosts disagreeing). With no endpoint or automation,
the unit of work is told so, and the submission asks for neither.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, bindparam, exists, func, literal, select

from mailroom.automations import enrol
from mailroom.core.auth import PERMISSIONS, Principal
from mailroom.core.context import Context
from mailroom.core.plans import get_plan
from mailroom.models import (
    Account,
    Automation,
    Contact,
    CustomFieldDefinition,
    Form,
    MailingList,
    Suppression,
    WebhookEndpoint,
    Workspace,
)
from mailroom.settings import Settings
from mailroom.webhooks import fanout

TTL_SECONDS = 5.0
MAX_KEPT = 1000  # forms kept per process; the oldest entry goes first


@dataclass(frozen=True)
class _Kept:
    version: tuple[Any, ...]
    at: float  # time.monotonic() when read
    lists: list[MailingList]  # the form's lists that exist, in its order (detached)
    registry: dict[str, CustomFieldDefinition]  # detached


_kept: dict[str, _Kept] = {}


def forget() -> None:
    """Drop everything kept (tests; a form changed in this process)."""
    _kept.clear()


def _statement() -> Any:
    """Built once: building a statement with six subqueries costs more than running it."""
    ws = Form.workspace_id
    lists, fields = MailingList, CustomFieldDefinition
    return (
        select(
            Form,
            Account.id,
            Account.plan,
            select(func.count()).where(lists.workspace_id == ws).scalar_subquery(),
            select(func.max(lists.updated_at)).where(lists.workspace_id == ws).scalar_subquery(),
            select(func.count()).where(fields.workspace_id == ws).scalar_subquery(),
            select(func.max(fields.updated_at)).where(fields.workspace_id == ws).scalar_subquery(),
            exists().where(WebhookEndpoint.workspace_id == ws, WebhookEndpoint.enabled.is_(True)),
            exists().where(Automation.workspace_id == ws, Automation.status == "active"),
        )
        .join(Workspace, Workspace.id == Form.workspace_id)
        .join(Account, Account.id == Workspace.account_id)
        .where(Form.id == bindparam("form_id"))
    )


_STATEMENT = _statement()


async def load(session: Any, settings: Settings, form_id: str) -> Loaded | None:
    """The form an id names (any workspace's: the id is the public address), a context of its
    workspace, its lists and the registry; None when there is no such form."""
    if not form_id or len(form_id) > 36:
        return None
    row = (await session.execute(_STATEMENT, {"form_id": form_id})).first()
    if row is None:
        return None
    form, account_id, plan = row[0], row[1], row[2]
    any_endpoint, any_automation = bool(row[7]), bool(row[8])
    principal = Principal(
        workspace_id=form.workspace_id,
        account_id=account_id,
        plan=get_plan(plan),
        permissions=frozenset(PERMISSIONS),
    )
    ctx = Context(session, principal, settings)
    # Nothing to read for this unit of work: the lookups the events and enrolments would
    # make (each module's own per-unit-of-work cache) are answered "none" from here.
    if not any_endpoint:
        fanout.known_none(ctx)
    if not any_automation:
        enrol.known_none(ctx)
    version = (tuple(form.list_ids), *row[3:7])
    kept = _kept.get(form.id)
    now = time.monotonic()
    if kept is None or kept.version != version or now - kept.at > TTL_SECONDS:
        kept = await _read(ctx, form, version, now)
    return Loaded(form, ctx, list(kept.lists), kept.registry)


@dataclass(frozen=True)
class Loaded:
    form: Form
    ctx: Context
    lists: list[MailingList]
    registry: dict[str, CustomFieldDefinition]


async def _read(ctx: Context, form: Form, version: tuple[Any, ...], now: float) -> _Kept:
    session = ctx.session
    found: dict[str, MailingList] = {}
    if form.list_ids:
        rows = await session.scalars(
            select(MailingList).where(
                MailingList.workspace_id == ctx.workspace_id, MailingList.id.in_(form.list_ids)
            )
        )
        found = {m.id: m for m in rows.all()}
    fields = (
        await session.scalars(
            select(CustomFieldDefinition).where(
                CustomFieldDefinition.workspace_id == ctx.workspace_id
            )
        )
    ).all()
    # Shared by later requests: out of this session, so that nothing here changes or expires them.
    for row in (*found.values(), *fields):
        session.expunge(row)
    kept = _Kept(
        version,
        now,
        [found[i] for i in form.list_ids if i in found],
        {f.key: f for f in fields},
    )
    if len(_kept) >= MAX_KEPT:
        _kept.pop(next(iter(_kept)))
    _kept[form.id] = kept
    return kept


def quiet(ctx: Context) -> bool:
    """No webhook endpoint and no active automation (as `load` found): events and enrolments
    of this unit of work write nothing, so nothing needs flushing for them."""
    return ctx.cache.get(fanout._CACHE_KEY) == [] and ctx.cache.get(enrol._CACHE_KEY) == []


def _known_statement() -> Any:
    """Built once: the address's suppression and contact, each or both absent, in one read."""
    ws: Any = bindparam("ws")
    one = select(literal(1).label("one")).subquery()
    return (
        select(Suppression, Contact)
        .select_from(one)
        .outerjoin(
            Suppression,
            and_(Suppression.workspace_id == ws, Suppression.email_hash == bindparam("digest")),
        )
        .outerjoin(Contact, and_(Contact.workspace_id == ws, Contact.email == bindparam("email")))
    )


_KNOWN = _known_statement()


async def known(ctx: Context, email: str) -> tuple[Suppression | None, Contact | None]:
    """What `suppressions.find` and `contacts.find_by_email` answer, in one statement."""
    values = {"ws": ctx.workspace_id, "digest": ctx.hash_email(email), "email": email}
    row = (await ctx.session.execute(_KNOWN, values)).one()
    return row[0], row[1]
