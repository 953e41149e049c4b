"""What erasing a contact does to its signup-form submissions: a pending one (waiting for its
confirmation email, holding the address and the answers) goes, so confirming it later cannot
bring the person back; a confirmed one keeps only that it happened (the form's counts), not
the answers or the address it came from. Run before the contact rows go, in the same
transaction."""

from __future__ import annotations

from sqlalchemy import delete, or_, select, update

from mailroom.contacts.selection import Selection
from mailroom.core.context import Context
from mailroom.models import Contact, FormSubmission


async def erase(ctx: Context, selection: Selection) -> None:
    chosen = selection.subquery()
    # A submission from an address that had unsubscribed names no contact, only the address.
    addresses = select(Contact.email).where(
        Contact.workspace_id == ctx.workspace_id, Contact.id.in_(chosen)
    )
    mine = FormSubmission.workspace_id == ctx.workspace_id
    await ctx.session.execute(
        delete(FormSubmission)
        .where(
            mine,
            FormSubmission.status == "pending",
            or_(FormSubmission.contact_id.in_(chosen), FormSubmission.email.in_(addresses)),
        )
        .execution_options(synchronize_session=False)
    )
    await ctx.session.execute(
        update(FormSubmission)
        .where(mine, FormSubmission.contact_id.in_(chosen))
        .values(answers={}, consent_ip="")
        .execution_options(synchronize_session=False)
    )
