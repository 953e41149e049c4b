"""What happens when someone submits a signup form (no key), and when they confirm it.

One rule for every answer: the page says the same whatever the address was (new, known,
unsubscribed, bounced), so a form cannot be used to learn who is on a list.

- Single opt-in and a clean address: the contact is created or updated (source `form`,
  consent ip/source/time), joins the form's lists confirmed, `form.submitted` fires and the
  form's `form_submitted` automations enrol it, all in one transaction.
- Double opt-in (the form's setting, a Free-plan workspace, or a list that asks for it): a new
  address becomes a contact at once and joins the lists unconfirmed; a known one is left as it
  is until it confirms. The confirmation email goes out; confirming applies the answers,
  confirms the memberships and enrols the contact.
- An address suppressed as `unsubscribed` or `deleted` (or a contact unsubscribed or
  archived) always goes through the confirmation email: nothing changes until it confirms,
  and confirming is the fresh consent that lifts the suppression.
- An address that bounced or complained changes nothing and is never mailed.

Confirming (the link in the email) is `forms.confirming`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from mailroom.automations import enrol as automations
from mailroom.contacts import fields as contact_fields
from mailroom.contacts import memberships
from mailroom.contacts import service as contacts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.custom_fields import values as typed
from mailroom.db import Database
from mailroom.events import service as events
from mailroom.forms import loading
from mailroom.forms import service as forms
from mailroom.forms.mailing import send_confirmation
from mailroom.forms.service import Field
from mailroom.models import (
    Contact,
    Form,
    FormSubmission,
    ListMember,
    MailingList,
)
from mailroom.pages.i18n import words
from mailroom.ratelimits import service as ratelimits
from mailroom.settings import Settings

VALID_SECONDS = 7 * 24 * 3600
FORM_NOT_FOUND = "Form not found"
NAME_MAX = 100
BLOCKED = ("bounced", "complained")


class Invalid(Exception):
    """The answers do not fit the form: a message per field key, in the page's language."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(next(iter(errors.values())))
        self.errors = errors


@dataclass(frozen=True)
class Accepted:
    double_opt_in: bool  # whether the page tells them to look for the confirmation email


# ---------------------------------------------------------------- reading the answers


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else ""
    if isinstance(value, int | float):
        return str(value)
    return value.strip() if isinstance(value, str) else ""


def read_answers(
    fields: list[Field], data: dict[str, Any], language: str
) -> tuple[str, dict[str, Any]]:
    """(the email, the other answers as the contact takes them:
    `{first_name?, last_name?, custom_fields?}`), or `Invalid`. Keys the form does not ask
    for are ignored; an empty optional field is left out."""
    _, t = words(language)
    errors: dict[str, str] = {}
    email = ""
    answers: dict[str, Any] = {}
    custom: dict[str, Any] = {}
    for field in fields:
        label = field.shown_label(t)
        raw = data.get(field.key)
        if field.type == "boolean":
            value = _boolean(raw)
            if value is None:
                errors[field.key] = t["form_boolean"].format(label=label)
            elif field.required and not value:
                errors[field.key] = t["form_tick"].format(label=label)
            elif value or field.key in data:
                custom[field.key] = value
            continue
        text = _text(raw)
        if not text:
            if field.required:
                errors[field.key] = t["form_required"].format(label=label)
            continue
        if field.key == "email":
            try:
                email = contact_fields.clean_email(text)
            except ApiError:
                errors[field.key] = t["form_bad_email"].format(label=label)
        elif field.key in ("first_name", "last_name"):
            if len(text) > NAME_MAX:
                errors[field.key] = t["form_too_long"].format(label=label, n=NAME_MAX)
            else:
                answers[field.key] = text
        else:
            value, problem = _typed(field, text, t, label)
            if problem:
                errors[field.key] = problem
            else:
                custom[field.key] = value
    if errors:
        raise Invalid(errors)
    if custom:
        answers["custom_fields"] = custom
    return email, answers


def _boolean(raw: Any) -> bool | None:
    if raw is None or raw == "":
        return False
    if isinstance(raw, bool):
        return raw
    parsed = typed.parse_boolean(raw)
    if parsed is None and isinstance(raw, str) and raw.strip().lower() in ("on", "1"):
        return True  # an HTML checkbox without a value sends "on"
    if parsed is None and isinstance(raw, str) and raw.strip().lower() in ("off", "0"):
        return False
    return parsed


def _typed(field: Field, text: str, t: dict[str, str], label: str) -> tuple[Any, str | None]:
    if len(text) > typed.MAX_STRING:
        return None, t["form_too_long"].format(label=label, n=typed.MAX_STRING)
    if field.type == "text":
        return text, None
    value = typed.coerce(field.type, field.options, text)
    if value is None or value is typed.CLEAR:
        key = {"number": "form_number", "date": "form_date", "dropdown": "form_choice"}
        message = t[key.get(field.type, "form_required")]
        return None, message.format(label=label, options=", ".join(field.options or []))
    return value, None


# ---------------------------------------------------------------- submitting


@dataclass(frozen=True)
class Public:
    """A form as its public page shows it."""

    form: Form
    fields: list[Field]
    double_opt_in: bool  # in effect: the form's, the plan's or one of its lists'


async def _form(session: Any, settings: Settings, form_id: str) -> tuple[Form, Context] | None:
    """The form an id names (any workspace's: the id is the public address) and a context of
    its workspace, or None."""
    found = await loading.load(session, settings, form_id)
    return (found.form, found.ctx) if found else None


def _public(found: loading.Loaded) -> tuple[Public, list[MailingList]]:
    form, lists = found.form, found.lists
    fields = forms.shown_fields(form, found.registry)
    return Public(form, fields, _double(found.ctx, form, lists)), lists


async def load_public(db: Database, settings: Settings, form_id: str) -> Public | None:
    async with db.session(write=False) as session:
        found = await loading.load(session, settings, form_id)
        return _public(found)[0] if found else None


def _double(ctx: Context, form: Form, lists: list[MailingList]) -> bool:
    return forms.effective_double_opt_in(ctx, form) or any(m.double_opt_in for m in lists)


@dataclass
class Handled:
    """What a POST to a form came to: no form (`public` None), rate limited (`wait`), invalid
    (`errors`), or accepted (`accepted`)."""

    public: Public | None
    language: str = "en"
    wait: int = 0
    errors: dict[str, str] | None = None
    accepted: Accepted | None = None


async def form_context(session: Any, settings: Settings, form_id: str) -> tuple[Form, Context]:
    found = await _form(session, settings, form_id)
    if found is None:
        raise ApiError(404, FORM_NOT_FOUND)
    return found


async def handle(
    db: Database,
    settings: Settings,
    form_id: str,
    data: dict[str, Any],
    *,
    ip: str,
    choose_language: Any,
) -> Handled:
    """A submission, in one transaction: the per-IP count (kept even when the answers are
    refused, so that guessing costs attempts), the answers checked, then `submit`.
    `choose_language(languages)` picks the page's language among the form's."""
    async with db.transaction() as session:
        found = await loading.load(session, settings, form_id)
        if found is None:
            return Handled(None)
        form, ctx = found.form, found.ctx
        public, lists = _public(found)
        language = choose_language(form.languages)
        decision = await ratelimits.hit(
            session,
            f"form:{form.id}:{ip}",
            limit=max(1, settings.form_rate_per_minute),
            window_seconds=60,
        )
        if not decision.allowed:
            return Handled(public, language, wait=decision.retry_after)
        if data.get("hp") not in (None, "", False):
            # A bot filled the hidden field: it is told what a person would be; nothing kept.
            return Handled(public, language, accepted=Accepted(public.double_opt_in))
        try:
            email, answers = read_answers(public.fields, data, language)
        except Invalid as invalid:
            return Handled(public, language, errors=invalid.errors)
        accepted = await submit(
            ctx, form, lists, public.double_opt_in, email, answers, ip=ip, language=language
        )
        return Handled(public, language, accepted=accepted)


async def submit(
    ctx: Context,
    form: Form,
    lists: list[MailingList],
    double: bool,
    email: str,
    answers: dict[str, Any],
    *,
    ip: str,
    language: str,
) -> Accepted:
    suppression, contact = await loading.known(ctx, email)
    if (suppression is not None and suppression.reason in BLOCKED) or (
        contact is not None and contact.status in BLOCKED
    ):
        return Accepted(double)  # never mailed again, and nothing tells them apart
    returning = suppression is not None or (contact is not None and contact.status != "subscribed")
    now = utcnow()
    consent = {"consent_ip": ip, "consent_source": f"form:{form.id}"}
    submission = FormSubmission(
        workspace_id=ctx.workspace_id,
        form_id=form.id,
        email=email,
        answers={**answers, "list_ids": [m.id for m in lists]},
        language=language,
        consent_ip=ip,
        status="pending",
        announced=False,
        created_at=now,
    )
    if not double and not returning:
        contact = await apply_answers(ctx, form, lists, contact, email, answers, language, consent)
        submission.status, submission.confirmed_at = "confirmed", now
        submission.contact_id, submission.email = contact.id, ""
        ctx.session.add(submission)
        await announce(ctx, form, contact, double=False)
        await automations.enrol(ctx, "form_submitted", [contact.id], form_id=form.id)
        return Accepted(False)
    if not returning:
        created = contact is None and bool(lists)
        if created:
            # A new address is on the lists now, unconfirmed until the email is answered.
            contact = await contacts.create_contact(
                ctx,
                {**answers, "email": email, "source": "form", "language": language},
                form_id=form.id,
                consent=consent,
                looked_up=True,
            )
        if contact is not None:
            if not await _join(ctx, form, contact, lists, confirmed=False, created=created):
                return Accepted(double)  # confirmed on every list already: nothing to ask
            submission.contact_id, submission.announced = contact.id, True
            await announce(ctx, form, contact, double=True)
    ctx.session.add(submission)
    await ctx.session.flush()
    # Past the address's emails of the day nothing is queued, and the answer is the same.
    await send_confirmation(ctx, submission, lists)
    # An unsubscribed address confirms even on a single opt-in form, but the answer is the
    # form's: it must not tell that this address was known.
    return Accepted(double)


async def form_lists(ctx: Context, list_ids: list[str]) -> list[MailingList]:
    """The form's lists that still exist, in the form's order."""
    if not list_ids:
        return []
    found = {
        m.id: m
        for m in (
            await ctx.session.scalars(
                select(MailingList).where(
                    MailingList.workspace_id == ctx.workspace_id, MailingList.id.in_(list_ids)
                )
            )
        ).all()
    }
    return [found[i] for i in list_ids if i in found]


async def apply_answers(
    ctx: Context,
    form: Form,
    lists: list[MailingList],
    contact: Contact | None,
    email: str,
    answers: dict[str, Any],
    language: str,
    consent: dict[str, str],
) -> Contact:
    """The answers land on the contact (created, updated, or subscribed again), with consent
    confirmed now, and the memberships are confirmed."""
    consent = {**consent, "consent_confirmed_at": utcnow().isoformat().replace("+00:00", "Z")}
    created = contact is None
    if contact is None:  # the callers have looked: no contact, no suppression left
        contact = await contacts.create_contact(
            ctx,
            {**answers, "email": email, "source": "form", "language": language},
            form_id=form.id,
            consent=consent,
            looked_up=True,
        )
    else:
        patch: dict[str, Any] = dict(answers) or {"custom_fields": {}}
        if contact.status != "subscribed":
            patch["resubscribe"] = True
        await contacts.update_contact(ctx, contact.id, patch, form_id=form.id, consent=consent)
    await _join(ctx, form, contact, lists, confirmed=True, created=created)
    return contact


async def _join(
    ctx: Context,
    form: Form,
    contact: Contact,
    lists: list[MailingList],
    *,
    confirmed: bool,
    created: bool = False,
) -> bool:
    """Put the contact on the lists (confirmed joins fire `contact.list_joined` with the list
    and form dimensions). Unconfirmed: whether any membership waits for confirmation.
    `created`: the contact was made in this transaction, so it is on no list yet."""
    now = utcnow()
    waiting = False
    for mailing_list in lists:
        member = (
            None if created else await ctx.session.get(ListMember, (mailing_list.id, contact.id))
        )
        if not confirmed and member is not None:
            waiting = waiting or member.status != "confirmed"
            continue
        if member is None:
            ctx.session.add(
                ListMember(
                    list_id=mailing_list.id,
                    contact_id=contact.id,
                    workspace_id=ctx.workspace_id,
                    status="confirmed" if confirmed else "unconfirmed",
                    created_at=now,
                    confirmed_at=now if confirmed else None,
                )
            )
        elif member.status != "confirmed":
            member.status, member.confirmed_at = "confirmed", now
        else:
            continue
        waiting = not confirmed
        if confirmed and not loading.quiet(ctx):  # quiet: the event and enrolment write nothing
            await ctx.session.flush()
            await memberships.list_event(
                ctx,
                "contact.list_joined",
                contact,
                mailing_list.id,
                mailing_list.name,
                form_id=form.id,
            )
    return waiting


async def announce(ctx: Context, form: Form, contact: Contact, *, double: bool) -> None:
    await events.emit_contact_event(
        ctx,
        "form.submitted",
        contact,
        extra={"form": {"id": form.id, "name": form.name}, "double_opt_in": double},
        form_id=form.id,
    )
