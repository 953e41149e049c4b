"""Automations: a trigger and an ordered list of steps, and one run per enrolled contact.

A run is background work (`DueWork`): `status` is `pending` while it has a next moment (its
`run_at`) and `done` once it ended; `state` is what clients see (`active`, `waiting`,
`completed`, `exited`, `failed`). The run points at its step by the step's `id`, so editing an
active automation keeps runs where they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base, DueWork

AUTOMATION_STATUSES = ("draft", "active", "paused")
RUN_STATES = ("active", "waiting", "completed", "exited", "failed")


class Automation(Base):
    __tablename__ = "automations"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name_key"),
        Index("ix_automations_workspace_created", "workspace_id", "created_at"),
        # Enrolment looks up the workspace's active automations of one trigger type.
        Index("ix_automations_workspace_status_trigger", "workspace_id", "status", "trigger_type"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    name_key: Mapped[str] = mapped_column(Text)  # casefolded name (see mailroom.named)
    status: Mapped[str] = mapped_column(String(12), default="draft")
    trigger_type: Mapped[str] = mapped_column(String(24))
    # {"type": ..., "tag_id"?, "list_id"?, "form_id"?, "field"?, "days"?, "time"?}
    trigger: Mapped[dict[str, Any]] = mapped_column(JSONValue)
    steps: Mapped[list[dict[str, Any]]] = mapped_column(JSONValue)
    allow_reentry: Mapped[bool] = mapped_column(Boolean, default=False)
    time_zone: Mapped[str] = mapped_column(String(64), default="UTC")
    failed_notified_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # date_anniversary: the last local day (YYYY-MM-DD) whose contacts have been enrolled.
    anniversaries_through: Mapped[str | None] = mapped_column(String(10), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AutomationRun(DueWork, Base):
    __tablename__ = "automation_runs"
    __table_args__ = (
        Index("ix_automation_runs_due", "status", "run_at"),
        Index("ix_automation_runs_automation", "automation_id", "created_at"),
        Index("ix_automation_runs_contact", "contact_id"),
        # A contact is in an automation once at a time: one live run per pair.
        Index(
            "ux_automation_runs_live",
            "automation_id",
            "contact_id",
            unique=True,
            sqlite_where=text("status = 'pending'"),
            postgresql_where=text("status = 'pending'"),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    automation_id: Mapped[str] = mapped_column(ForeignKey("automations.id", ondelete="CASCADE"))
    # No foreign key: a deleted contact's run stays, `exited`, with its history.
    contact_id: Mapped[str] = mapped_column(String(36))
    state: Mapped[str] = mapped_column(String(12), default="active")
    step_id: Mapped[str | None] = mapped_column(String(64), default=None)
    # Set while the run waits at `step_id` (a wait step): when due, it goes on after it.
    waiting: Mapped[bool] = mapped_column(Boolean, default=False)
    # When a step that cannot go on yet (sending paused) first held this run.
    held_since: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    history: Mapped[list[dict[str, Any]]] = mapped_column(JSONValue, default=list)
    # What the run is about, for triggers with a subject: {"store_id", "order_id"} (an order's
    # id) or {"store_id", "cart_id"} (a cart's id); its email steps render it as order / cart.
    context: Mapped[dict[str, Any] | None] = mapped_column(JSONValue, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
