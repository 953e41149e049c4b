"""ecommerce: stores, products, orders (with their lines), carts, platform deliveries, revenue
attribution, and the order or cart an automation run is about

Revision ID: 20261127_05
Revises: 20261127_04
Create Date: 2026-11-27 09:00:00
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from mailroom.core.dbtypes import UTCDateTime

revision: str = "20261127_05"
down_revision: str | None = "20261127_04"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _store_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["store_id"],
        ["ecommerce_stores.id"],
        name=op.f(f"fk_{table}_store_id_ecommerce_stores"),
        ondelete="CASCADE",
    )


def _stamps() -> list[sa.Column[Any]]:
    return [
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "ecommerce_stores",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("platform", sa.String(length=20), nullable=False),
        sa.Column("abandon_after_minutes", sa.Integer(), nullable=False),
        sa.Column("attribution_days", sa.Integer(), nullable=False),
        sa.Column("webhook_secret", sa.String(length=100), nullable=False),
        *_stamps(),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_ecommerce_stores_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ecommerce_stores")),
        sa.UniqueConstraint(
            "workspace_id", "name_key", name=op.f("uq_ecommerce_stores_workspace_id_name_key")
        ),
    )

    op.create_table(
        "ecommerce_products",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("store_id", sa.String(length=36), nullable=False),
        sa.Column("external_id", sa.String(length=255), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("title_key", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("image_url", sa.Text(), nullable=True),
        sa.Column("price", sa.BigInteger(), nullable=True),
        sa.Column("categories", _json(), nullable=False),
        *_stamps(),
        _store_fk("ecommerce_products"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ecommerce_products")),
        sa.UniqueConstraint(
            "store_id", "external_id", name=op.f("uq_ecommerce_products_store_id_external_id")
        ),
    )
    op.create_index(
        "ix_ecommerce_products_store_title", "ecommerce_products", ["store_id", "title_key", "id"]
    )

    op.create_table(
        "ecommerce_orders",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("store_id", sa.String(length=36), nullable=False),
        sa.Column("external_id", sa.String(length=255), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=True),
        sa.Column("email_hash", sa.String(length=64), nullable=True),
        sa.Column("contact_id", sa.String(length=36), nullable=True),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("placed_at", UTCDateTime(), nullable=False),
        sa.Column("lines", _json(), nullable=False),
        sa.Column("cart_id", sa.String(length=255), nullable=True),
        sa.Column("source_updated_at", UTCDateTime(), nullable=True),
        sa.Column("attributed_type", sa.String(length=12), nullable=True),
        sa.Column("attributed_id", sa.String(length=36), nullable=True),
        *_stamps(),
        _store_fk("ecommerce_orders"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ecommerce_orders")),
        sa.UniqueConstraint(
            "store_id", "external_id", name=op.f("uq_ecommerce_orders_store_id_external_id")
        ),
    )
    op.create_index("ix_ecommerce_orders_cart", "ecommerce_orders", ["store_id", "cart_id"])
    op.create_index(
        "ix_ecommerce_orders_contact",
        "ecommerce_orders",
        ["workspace_id", "contact_id", "placed_at", "status", "total"],
    )
    op.create_index(
        "ix_ecommerce_orders_email_hash", "ecommerce_orders", ["workspace_id", "email_hash"]
    )
    op.create_index(
        "ix_ecommerce_orders_attributed",
        "ecommerce_orders",
        ["workspace_id", "attributed_id", "status"],
    )
    op.create_index(
        "ix_ecommerce_orders_store_placed", "ecommerce_orders", ["store_id", "placed_at", "id"]
    )

    op.create_table(
        "ecommerce_order_lines",
        sa.Column("order_id", sa.String(length=36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("store_id", sa.String(length=36), nullable=False),
        sa.Column("product_id", sa.String(length=255), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("price", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["order_id"],
            ["ecommerce_orders.id"],
            name=op.f("fk_ecommerce_order_lines_order_id_ecommerce_orders"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("order_id", "position", name=op.f("pk_ecommerce_order_lines")),
    )
    op.create_index(
        "ix_ecommerce_order_lines_product", "ecommerce_order_lines", ["store_id", "product_id"]
    )

    op.create_table(
        "ecommerce_carts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("store_id", sa.String(length=36), nullable=False),
        sa.Column("external_id", sa.String(length=255), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=True),
        sa.Column("email_hash", sa.String(length=64), nullable=True),
        sa.Column("contact_id", sa.String(length=36), nullable=True),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("lines", _json(), nullable=False),
        sa.Column("checkout_url", sa.Text(), nullable=True),
        sa.Column("order_id", sa.String(length=255), nullable=True),
        sa.Column("abandoned_at", UTCDateTime(), nullable=True),
        sa.Column("converted_at", UTCDateTime(), nullable=True),
        sa.Column("source_updated_at", UTCDateTime(), nullable=True),
        *_stamps(),
        _store_fk("ecommerce_carts"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ecommerce_carts")),
        sa.UniqueConstraint(
            "store_id", "external_id", name=op.f("uq_ecommerce_carts_store_id_external_id")
        ),
    )
    op.create_index("ix_ecommerce_carts_contact", "ecommerce_carts", ["workspace_id", "contact_id"])
    op.create_index(
        "ix_ecommerce_carts_email_hash", "ecommerce_carts", ["workspace_id", "email_hash"]
    )
    op.create_index(
        "ix_ecommerce_carts_status_updated", "ecommerce_carts", ["status", "updated_at"]
    )
    op.create_index(
        "ix_ecommerce_carts_store_updated", "ecommerce_carts", ["store_id", "updated_at", "id"]
    )

    op.create_table(
        "ecommerce_deliveries",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("store_id", sa.String(length=36), nullable=False),
        sa.Column("platform", sa.String(length=20), nullable=False),
        sa.Column("topic", sa.String(length=100), nullable=False),
        sa.Column("delivery_id", sa.String(length=255), nullable=True),
        sa.Column("outcome", sa.String(length=12), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        _store_fk("ecommerce_deliveries"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ecommerce_deliveries")),
        sa.UniqueConstraint(
            "store_id",
            "delivery_id",
            name=op.f("uq_ecommerce_deliveries_store_id_delivery_id"),
        ),
    )
    op.create_index(
        "ix_ecommerce_deliveries_store_received",
        "ecommerce_deliveries",
        ["store_id", "received_at"],
    )

    with op.batch_alter_table("automation_runs") as batch:
        batch.add_column(sa.Column("context", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("automation_runs") as batch:
        batch.drop_column("context")
    op.drop_table("ecommerce_deliveries")
    op.drop_table("ecommerce_carts")
    op.drop_table("ecommerce_order_lines")
    op.drop_table("ecommerce_orders")
    op.drop_table("ecommerce_products")
    op.drop_table("ecommerce_stores")
