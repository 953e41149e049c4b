"""ecommerce: each contact's purchase figures (total spent, number of orders, last order) and
the products it bought, kept beside its orders, so purchase segments read one row per contact
(or per buyer of a product) instead of adding up orders and their lines; the lines' product
index goes (nothing reads lines by product any more)

Revision ID: 20261127_06
Revises: 20261127_05
Create Date: 2026-11-27 12:10:00

Filled from the orders already stored, one statement each.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mailroom.core.dbtypes import UTCDateTime

revision: str = "20261127_06"
down_revision: str | None = "20261127_05"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ecommerce_customer_totals",
        sa.Column("contact_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("total_spent", sa.BigInteger(), nullable=False),
        sa.Column("orders_count", sa.Integer(), nullable=False),
        sa.Column("last_order_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["contact_id"], ["contacts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("contact_id"),
    )
    for name, column in (
        ("spent", "total_spent"),
        ("count", "orders_count"),
        ("last", "last_order_at"),
    ):
        op.create_index(
            f"ix_ecommerce_customer_totals_{name}",
            "ecommerce_customer_totals",
            ["workspace_id", column, "contact_id"],
        )
    # Orders name only live contacts (deleting one unlinks its orders), but a join keeps
    # the foreign key safe whatever an older version left behind.
    op.execute(
        "INSERT INTO ecommerce_customer_totals "
        "(contact_id, workspace_id, total_spent, orders_count, last_order_at) "
        "SELECT o.contact_id, o.workspace_id, SUM(o.total), COUNT(*), MAX(o.placed_at) "
        "FROM ecommerce_orders o JOIN contacts c ON c.id = o.contact_id "
        "WHERE o.status IN ('placed', 'paid', 'fulfilled') "
        "GROUP BY o.contact_id, o.workspace_id"
    )

    op.create_table(
        "ecommerce_customer_products",
        sa.Column("contact_id", sa.String(length=36), nullable=False),
        sa.Column("store_id", sa.String(length=36), nullable=False),
        sa.Column("product_id", sa.String(length=255), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("last_purchased_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["contact_id"], ["contacts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["store_id"], ["ecommerce_stores.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("contact_id", "store_id", "product_id"),
    )
    op.create_index(
        "ix_ecommerce_customer_products_product",
        "ecommerce_customer_products",
        ["store_id", "product_id", "last_purchased_at", "contact_id"],
    )
    op.execute(
        "INSERT INTO ecommerce_customer_products "
        "(contact_id, store_id, product_id, workspace_id, last_purchased_at) "
        "SELECT o.contact_id, l.store_id, l.product_id, o.workspace_id, MAX(o.placed_at) "
        "FROM ecommerce_orders o JOIN contacts c ON c.id = o.contact_id "
        "JOIN ecommerce_order_lines l ON l.order_id = o.id "
        "WHERE o.status IN ('placed', 'paid', 'fulfilled') "
        "GROUP BY o.contact_id, l.store_id, l.product_id, o.workspace_id"
    )
    op.drop_index("ix_ecommerce_order_lines_product", table_name="ecommerce_order_lines")


def downgrade() -> None:
    op.create_index(
        "ix_ecommerce_order_lines_product", "ecommerce_order_lines", ["store_id", "product_id"]
    )
    op.drop_table("ecommerce_customer_products")
    op.drop_table("ecommerce_customer_totals")
