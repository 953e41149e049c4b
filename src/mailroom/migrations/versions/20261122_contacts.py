"""contacts, tags, lists, custom fields, suppressions, events outbox

Revision ID: 20261122_02
Revises: 20261122_01
Create Date: 2026-11-22 00:52:51.841612
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import mailroom.core.dbtypes

revision: str = "20261122_02"
down_revision: str | None = "20261122_01"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "contacts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("email_hash", sa.String(length=64), nullable=False),
        sa.Column("first_name", sa.String(length=100), nullable=False),
        sa.Column("last_name", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("previous_status", sa.String(length=20), nullable=True),
        sa.Column(
            "custom_fields",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("language", sa.String(length=8), nullable=True),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.Column("subscribed_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("unsubscribed_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_contacts_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_contacts")),
        sa.UniqueConstraint("workspace_id", "email", name=op.f("uq_contacts_workspace_id_email")),
    )
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.create_index(
            "ix_contacts_workspace_created", ["workspace_id", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_contacts_workspace_email_hash", ["workspace_id", "email_hash"], unique=False
        )
        batch_op.create_index(
            "ix_contacts_workspace_source", ["workspace_id", "source"], unique=False
        )
        batch_op.create_index(
            "ix_contacts_workspace_status_created",
            ["workspace_id", "status", "created_at"],
            unique=False,
        )

    op.create_table(
        "custom_fields",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=80), nullable=False),
        sa.Column("type", sa.String(length=10), nullable=False),
        sa.Column(
            "options",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_custom_fields_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_custom_fields")),
        sa.UniqueConstraint("workspace_id", "key", name=op.f("uq_custom_fields_workspace_id_key")),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("type", sa.String(length=50), nullable=False),
        sa.Column(
            "data",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("list_id", sa.String(length=36), nullable=True),
        sa.Column("tag_id", sa.String(length=36), nullable=True),
        sa.Column("form_id", sa.String(length=36), nullable=True),
        sa.Column("campaign_id", sa.String(length=36), nullable=True),
        sa.Column("domain_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("dispatched_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_events_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_events_undispatched", ["dispatched_at", "created_at"], unique=False
        )
        batch_op.create_index(
            "ix_events_workspace_created", ["workspace_id", "created_at"], unique=False
        )

    op.create_table(
        "lists",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=False),
        sa.Column("double_opt_in", sa.Boolean(), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_lists_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lists")),
        sa.UniqueConstraint(
            "workspace_id", "name_key", name=op.f("uq_lists_workspace_id_name_key")
        ),
    )
    op.create_table(
        "suppressions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("email_hash", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.String(length=20), nullable=False),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("email_masked", sa.String(length=254), nullable=True),
        sa.Column("email_domain", sa.String(length=253), nullable=True),
        sa.Column("erased", sa.Boolean(), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_suppressions_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_suppressions")),
        sa.UniqueConstraint(
            "workspace_id", "email_hash", name=op.f("uq_suppressions_workspace_id_email_hash")
        ),
    )
    with op.batch_alter_table("suppressions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_suppressions_workspace_created", ["workspace_id", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_suppressions_workspace_reason",
            ["workspace_id", "reason", "created_at"],
            unique=False,
        )

    op.create_table(
        "tags",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column("color", sa.String(length=7), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_tags_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tags")),
        sa.UniqueConstraint("workspace_id", "name_key", name=op.f("uq_tags_workspace_id_name_key")),
    )
    op.create_table(
        "contact_tags",
        sa.Column("contact_id", sa.String(length=36), nullable=False),
        sa.Column("tag_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["contact_id"],
            ["contacts.id"],
            name=op.f("fk_contact_tags_contact_id_contacts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tag_id"], ["tags.id"], name=op.f("fk_contact_tags_tag_id_tags"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("contact_id", "tag_id", name=op.f("pk_contact_tags")),
    )
    with op.batch_alter_table("contact_tags", schema=None) as batch_op:
        batch_op.create_index("ix_contact_tags_tag_contact", ["tag_id", "contact_id"], unique=False)

    op.create_table(
        "list_members",
        sa.Column("list_id", sa.String(length=36), nullable=False),
        sa.Column("contact_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("confirmed_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["contact_id"],
            ["contacts.id"],
            name=op.f("fk_list_members_contact_id_contacts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["list_id"],
            ["lists.id"],
            name=op.f("fk_list_members_list_id_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("list_id", "contact_id", name=op.f("pk_list_members")),
    )
    with op.batch_alter_table("list_members", schema=None) as batch_op:
        batch_op.create_index("ix_list_members_contact", ["contact_id"], unique=False)
        batch_op.create_index(
            "ix_list_members_list_created", ["list_id", "created_at"], unique=False
        )
    op.create_table(
        "contact_counts",
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("subscribed", sa.BigInteger(), nullable=False),
        sa.Column("unsubscribed", sa.BigInteger(), nullable=False),
        sa.Column("bounced", sa.BigInteger(), nullable=False),
        sa.Column("complained", sa.BigInteger(), nullable=False),
        sa.Column("archived", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", name=op.f("pk_contact_counts")),
    )
    if op.get_bind().dialect.name == "postgresql":
        # Substring search on contacts (`q`): a trigram index serves LIKE '%term%'.
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.create_index(
            "ix_contacts_search_trgm",
            "contacts",
            ["search_text"],
            postgresql_using="gin",
            postgresql_ops={"search_text": "gin_trgm_ops"},
        )
        for statement in PG_COUNT_TRIGGERS:
            op.execute(statement)
    else:
        op.create_index(
            "ix_contacts_search_cover", "contacts", ["workspace_id", "search_text", "status"]
        )
        for statement in SQLITE_COUNT_TRIGGERS:
            op.execute(statement)


STATUSES = ("subscribed", "unsubscribed", "bounced", "complained", "archived")
_PG_SUMS = ", ".join(f"coalesce(sum(k) FILTER (WHERE status = '{s}'), 0)" for s in STATUSES)
_PG_UPSERT = "ON CONFLICT (workspace_id) DO UPDATE SET " + ", ".join(
    f"{s} = c.{s} + EXCLUDED.{s}" for s in STATUSES
)
_PG_COLUMNS = "workspace_id, " + ", ".join(STATUSES)


def _pg_function(name: str, deltas: str) -> str:
    # One row per workspace: a statement's changes are summed and applied in one upsert,
    # so bulk statements pay once, and row locks are taken in workspace order.
    return f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO contact_counts AS c ({_PG_COLUMNS})
  SELECT workspace_id, {_PG_SUMS} FROM ({deltas}) d
  GROUP BY workspace_id ORDER BY workspace_id
  {_PG_UPSERT};
  RETURN NULL;
END $$"""


PG_COUNT_TRIGGERS = [
    _pg_function("contact_counts_on_insert", "SELECT workspace_id, status, 1 AS k FROM new_rows"),
    _pg_function("contact_counts_on_delete", "SELECT workspace_id, status, -1 AS k FROM old_rows"),
    _pg_function(
        "contact_counts_on_update",
        "SELECT workspace_id, status, -1 AS k FROM old_rows "
        "UNION ALL SELECT workspace_id, status, 1 AS k FROM new_rows",
    ),
    "CREATE TRIGGER contacts_count_insert AFTER INSERT ON contacts "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION contact_counts_on_insert()",
    "CREATE TRIGGER contacts_count_delete AFTER DELETE ON contacts "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION contact_counts_on_delete()",
    "CREATE TRIGGER contacts_count_update AFTER UPDATE ON contacts "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION contact_counts_on_update()",
]


def _sqlite_add(row: str, sign: str) -> str:
    values = ", ".join(f"{sign}({row}.status = '{s}')" for s in STATUSES)
    updates = ", ".join(f"{s} = {s} + excluded.{s}" for s in STATUSES)
    return (
        f"INSERT INTO contact_counts ({_PG_COLUMNS}) VALUES ({row}.workspace_id, {values}) "
        f"ON CONFLICT (workspace_id) DO UPDATE SET {updates};"
    )


SQLITE_COUNT_TRIGGERS = [
    "CREATE TRIGGER contacts_count_insert AFTER INSERT ON contacts BEGIN "
    + _sqlite_add("NEW", "")
    + " END",
    "CREATE TRIGGER contacts_count_delete AFTER DELETE ON contacts BEGIN "
    + _sqlite_add("OLD", "-")
    + " END",
    "CREATE TRIGGER contacts_count_update AFTER UPDATE OF status, workspace_id ON contacts "
    "WHEN OLD.status IS NOT NEW.status OR OLD.workspace_id IS NOT NEW.workspace_id BEGIN "
    + _sqlite_add("OLD", "-")
    + " "
    + _sqlite_add("NEW", "")
    + " END",
]


def downgrade() -> None:
    for trigger in ("contacts_count_insert", "contacts_count_delete", "contacts_count_update"):
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON contacts")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    if op.get_bind().dialect.name == "postgresql":
        for name in ("insert", "delete", "update"):
            op.execute(f"DROP FUNCTION IF EXISTS contact_counts_on_{name}()")
        op.drop_index("ix_contacts_search_trgm", table_name="contacts")
    op.drop_table("contact_counts")
    with op.batch_alter_table("list_members", schema=None) as batch_op:
        batch_op.drop_index("ix_list_members_list_created")
        batch_op.drop_index("ix_list_members_contact")

    op.drop_table("list_members")
    with op.batch_alter_table("contact_tags", schema=None) as batch_op:
        batch_op.drop_index("ix_contact_tags_tag_contact")

    op.drop_table("contact_tags")
    op.drop_table("tags")
    with op.batch_alter_table("suppressions", schema=None) as batch_op:
        batch_op.drop_index("ix_suppressions_workspace_reason")
        batch_op.drop_index("ix_suppressions_workspace_created")

    op.drop_table("suppressions")
    op.drop_table("lists")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_workspace_created")
        batch_op.drop_index("ix_events_undispatched")

    op.drop_table("events")
    op.drop_table("custom_fields")
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_index("ix_contacts_workspace_status_created")
        batch_op.drop_index("ix_contacts_workspace_source")
        batch_op.drop_index("ix_contacts_workspace_email_hash")
        batch_op.drop_index("ix_contacts_workspace_created")

    op.drop_table("contacts")
