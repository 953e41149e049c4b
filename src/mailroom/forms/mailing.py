"""The confirmation email of a signup form submission, and the cap that keeps a form from
being used to bomb an address with them.

Anyone can submit any address, so at most `CONFIRMATIONS_PER_DAY` confirmation emails go to
one address per workspace in a rolling day (counted in `rate_limit_hits` under the address's
hash, never the address). Past that the submission is kept as usual but no email is queued,
and the page answers exactly as it would have: the cap tells nothing about the address.
"""

from __future__ import annotations

import time

from sqlalchemy import select

from mailroom.accounts import service as accounts
from mailroom.core import tokens
from mailroom.core.context import Context
from mailroom.models import FormSubmission, MailingList, Workspace
from mailroom.pages.emails import confirmation_email
from mailroom.ratelimits import service as ratelimits
from mailroom.sending import transactional
from mailroom.settings import Settings

CONFIRM = "form-confirm"  # token purpose
CONFIRMATIONS_PER_DAY = 3
DAY_SECONDS = 24 * 3600


def confirm_url(settings: Settings, submission: FormSubmission) -> str:
    token = tokens.sign(
        settings.resolved_secret_key,
        CONFIRM,
        submission.workspace_id,
        submission.id,
        str(int(time.time())),
    )
    return f"{settings.public_url.rstrip('/')}/f/confirm/{token}"


def cap_key(ctx: Context, email: str) -> str:
    return f"form-mail:{ctx.workspace_id}:{ctx.hash_email(email)}"


async def send_confirmation(
    ctx: Context, submission: FormSubmission, lists: list[MailingList]
) -> bool:
    """Queue the confirmation email, in the caller's transaction; False (nothing queued)
    when the address already had its emails of the day."""
    decision = await ratelimits.hit(
        ctx.session,
        cap_key(ctx, submission.email),
        limit=CONFIRMATIONS_PER_DAY,
        window_seconds=DAY_SECONDS,
    )
    if not decision.allowed:
        return False
    name = await ctx.session.scalar(
        select(accounts.shown_name()).where(Workspace.id == ctx.workspace_id)
    )
    message = confirmation_email(
        submission.language,
        str(name or ""),
        ", ".join(m.name for m in lists) if lists else None,
        submission.email,
        confirm_url(ctx.settings, submission),
    )
    await transactional.queue_system(
        ctx, email=submission.email, contact_id=submission.contact_id, message=message
    )
    return True
