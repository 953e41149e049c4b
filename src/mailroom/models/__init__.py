"""Every table. Relational data is intertwined, so tables live here together and no domain
package imports another domain package to reach a table. Importing this package registers
every model on `Base.metadata` (Alembic's autogenerate and the tests rely on that)."""

from mailroom.models.accounts import Account, ApiKey, Person, Workspace, WorkspaceMember
from mailroom.models.audit import AuditEntry
from mailroom.models.contacts import (
    CONTACT_STATUSES,
    Contact,
    ContactCounts,
    ContactTag,
    CustomFieldDefinition,
    Tag,
    search_text,
)
from mailroom.models.events import Event
from mailroom.models.jobs import Job
from mailroom.models.lists import ListMember, MailingList
from mailroom.models.media import MediaFile
from mailroom.models.ratelimit import RateLimitHit
from mailroom.models.scratch import BulkSelection, ImportStaging
from mailroom.models.suppressions import REASON_STRENGTH, Suppression
from mailroom.models.webhooks import WebhookDelivery, WebhookEndpoint

__all__ = [
    "CONTACT_STATUSES",
    "REASON_STRENGTH",
    "Account",
    "ApiKey",
    "AuditEntry",
    "BulkSelection",
    "Contact",
    "ContactCounts",
    "ContactTag",
    "CustomFieldDefinition",
    "Event",
    "ImportStaging",
    "Job",
    "ListMember",
    "MailingList",
    "MediaFile",
    "Person",
    "RateLimitHit",
    "Suppression",
    "Tag",
    "WebhookDelivery",
    "WebhookEndpoint",
    "Workspace",
    "WorkspaceMember",
    "search_text",
]
