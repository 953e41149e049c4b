"""Customers are addresses with orders: never contacts, never subscribers by themselves.

An order or cart keeps the normalised address and its hash (the contacts' own HMAC), and
names the workspace's contact with that address as `contact_id` when there is one: looked up
when the order arrives (`contacts_by_hash`), and set for the orders and carts already stored
when a contact with the address appears later (`link`, called where contacts are created or
change address). Deleting a contact unlinks its orders and carts; erasing it also empties the
address on them (`forget`). Amounts stay, so revenue figures do not move.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from mailroom.contacts.selection import Selection, execute
from mailroom.core.context import Context
from mailroom.db import AMONG, among, chunks
from mailroom.models import Cart, Contact, Order

TABLES = ("ecommerce_orders", "ecommerce_carts")


async def contacts_by_hash(ctx: Context, hashes: set[str]) -> dict[str, str]:
    """{email_hash: contact id} of the workspace's contacts among `hashes` (one query)."""
    found: dict[str, str] = {}
    for chunk in chunks(ctx.session, sorted(hashes)):
        rows = await ctx.session.execute(
            select(Contact.email_hash, Contact.id).where(
                Contact.workspace_id == ctx.workspace_id, among(ctx.session, Contact.email_hash)
            ),
            {AMONG: chunk},
        )
        found.update({digest: contact_id for digest, contact_id in rows.all()})
    return found


async def link(ctx: Context, hashes: list[str]) -> int:
    """Name the contacts now holding these addresses on the orders and carts that carry them
    without a contact yet; returns the rows linked. One UPDATE ... FROM per table (per chunk
    of addresses on SQLite: an import links its thousands at once)."""
    linked = 0
    for model in (Order, Cart):
        for chunk in chunks(ctx.session, hashes):
            # One address (a contact created or renamed) as a plain equality: the index on
            # (workspace_id, email_hash) serves it whatever the planner's statistics say.
            one = len(chunk) == 1
            result: Any = await ctx.session.execute(
                update(model)
                .where(
                    model.workspace_id == ctx.workspace_id,
                    model.contact_id.is_(None),
                    model.email_hash == chunk[0] if one else among(ctx.session, model.email_hash),
                    Contact.workspace_id == ctx.workspace_id,
                    Contact.email_hash == model.email_hash,
                )
                .values(contact_id=Contact.id)
                .execution_options(synchronize_session=False),
                {} if one else {AMONG: chunk},
            )
            linked += int(getattr(result, "rowcount", 0) or 0)
    return linked


async def forget(ctx: Context, selection: Selection, *, erase: bool) -> None:
    """The selected contacts are being deleted (or erased): their orders and carts name no
    contact any more; erased, they keep no address either (found by contact or by the
    address's hash, so an order that was never linked loses it too). Run before the contact
    rows go, in the same transaction."""
    chosen = "(SELECT contact_id FROM bulk_selection WHERE run_id = :run)"
    for table in TABLES:
        if erase:
            await execute(
                ctx,
                f"UPDATE {table} SET contact_id = NULL, email = NULL, email_hash = NULL "
                f"WHERE workspace_id = :ws AND (contact_id IN {chosen} OR email_hash IN "
                f"(SELECT email_hash FROM contacts WHERE workspace_id = :ws AND id IN {chosen}))",
                run=selection.run_id,
            )
        else:
            await execute(
                ctx,
                f"UPDATE {table} SET contact_id = NULL "
                f"WHERE workspace_id = :ws AND contact_id IN {chosen}",
                run=selection.run_id,
            )
