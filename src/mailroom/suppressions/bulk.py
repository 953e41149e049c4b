"""Suppression rows for many contacts at once (bulk unsubscribe, delete, erase): one
INSERT ... SELECT ... ON CONFLICT over a contact selection."""

from __future__ import annotations

from sqlalchemy import text

from mailroom.contacts.selection import Selection, execute
from mailroom.core.context import Context
from mailroom.db import sql_uuid


def _mask_sql(dialect: str) -> tuple[str, str]:
    if dialect == "postgresql":
        return (
            "left(c.email, 1) || '***@' || split_part(c.email, '@', 2)",
            "split_part(c.email, '@', 2)",
        )
    domain = "substr(c.email, instr(c.email, '@') + 1)"
    return f"substr(c.email, 1, 1) || '***@' || {domain}", domain


async def suppress_selection(
    ctx: Context, selection: Selection, *, reason: str, source: str, erase: bool = False
) -> int:
    """Upsert suppression rows for every selected address, never weakening a reason.
    Returns rows added or changed."""
    masked, domain = ("NULL", "NULL") if erase else _mask_sql(ctx.dialect)
    weaker = {
        "unsubscribed": "('deleted')",
        "bounced": "('deleted', 'unsubscribed')",
        "complained": "('deleted', 'unsubscribed', 'bounced')",
        "deleted": "('')",
    }[reason]
    truth = "true" if ctx.dialect == "postgresql" else "1"
    if erase:
        on_conflict = (
            f"DO UPDATE SET erased = {truth}, email_masked = NULL, email_domain = NULL, "
            "updated_at = excluded.updated_at"
        )
    else:
        on_conflict = (
            "DO UPDATE SET reason = excluded.reason, source = excluded.source, "
            f"updated_at = excluded.updated_at WHERE suppressions.reason IN {weaker}"
        )
    return await execute(
        ctx,
        f"""
        INSERT INTO suppressions (id, workspace_id, email_hash, reason, source, email_masked,
                                  email_domain, erased, created_at, updated_at)
        SELECT {sql_uuid(ctx.dialect)}, c.workspace_id, c.email_hash, :reason, :source,
               {masked}, {domain}, {truth if erase else ("false" if ctx.dialect == "postgresql" else "0")},
               :now, :now
        FROM contacts c JOIN bulk_selection s ON s.contact_id = c.id AND s.run_id = :run
        WHERE c.workspace_id = :ws
        ON CONFLICT (workspace_id, email_hash) {on_conflict}
        """,
        run=selection.run_id,
        reason=reason,
        source=source,
    )


async def blocked_count(ctx: Context, selection: Selection) -> int:
    return int(
        await ctx.session.scalar(
            text(
                "SELECT count(*) FROM contacts c "
                "JOIN bulk_selection s ON s.contact_id = c.id AND s.run_id = :run "
                "JOIN suppressions su ON su.workspace_id = c.workspace_id "
                "AND su.email_hash = c.email_hash WHERE c.workspace_id = :ws"
            ),
            {"run": selection.run_id, "ws": ctx.workspace_id},
        )
        or 0
    )
