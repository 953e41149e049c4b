"""What the send log keeps of a contact who is deleted or erased (the spec's state table:
"send-log entries anonymised"): the rows stay, so campaign counts and the account's history
hold, but the address becomes its masked form (delete: `j***@example.com`, as the suppression
row keeps it) or its hash (erase), and the rows no longer point at the contact.

One UPDATE for any number of contacts, run before the contact rows go."""

from __future__ import annotations

from mailroom.contacts.selection import Selection, execute
from mailroom.core.context import Context

_MASKED = {
    # `mailroom.core.emails.mask_email`, in SQL: first character, ***, @domain.
    "postgresql": "left(c.email, 1) || '***@' || split_part(c.email, '@', 2)",
    "sqlite": "substr(c.email, 1, 1) || '***@' || substr(c.email, instr(c.email, '@') + 1)",
}


async def anonymise(ctx: Context, selection: Selection, *, erase: bool) -> int:
    """Anonymise the send-log rows of the selected contacts; returns the rows changed."""
    replacement = "c.email_hash" if erase else _MASKED[ctx.dialect]
    return await execute(
        ctx,
        f"UPDATE send_log SET email = (SELECT {replacement} FROM contacts c "
        "WHERE c.id = send_log.contact_id), contact_id = NULL, updated_at = :now "
        "WHERE workspace_id = :ws AND contact_id IN "
        "(SELECT contact_id FROM bulk_selection WHERE run_id = :run)",
        run=selection.run_id,
    )
