"""Every table. Relational data is intertwined, so tables live here together and no domain
package imports another domain package to reach a table. Importing this package registers
every model on `Base.metadata` (Alembic's autogenerate and the tests rely on that)."""

from mailroom.models.accounts import (
    Account,
    ApiKey,
    DashboardSession,
    Person,
    Workspace,
    WorkspaceMember,
)
from mailroom.models.assistants import (
    ASSISTANT_KINDS,
    Assistant,
    AssistantGrant,
    AssistantToken,
    OAuthClient,
    OAuthCode,
    OAuthRequest,
)
from mailroom.models.audit import AuditEntry
from mailroom.models.automations import (
    AUTOMATION_STATUSES,
    RUN_STATES,
    Automation,
    AutomationRun,
)
from mailroom.models.blueprints import Blueprint
from mailroom.models.campaigns import CAMPAIGN_STATUSES, Campaign, SendingSettings
from mailroom.models.contacts import (
    CONTACT_STATUSES,
    Contact,
    ContactCounts,
    ContactTag,
    CustomFieldDefinition,
    Tag,
    search_text,
)
from mailroom.models.domains import DOMAIN_STATUSES, DmarcRecord, DmarcReport, SendingDomain
from mailroom.models.ecommerce import (
    CART_STATUSES,
    ORDER_STATUSES,
    PURCHASE_STATUSES,
    STORE_PLATFORMS,
    Cart,
    CustomerProduct,
    CustomerTotals,
    Order,
    OrderLine,
    Product,
    Store,
    StoreDelivery,
)
from mailroom.models.events import Event
from mailroom.models.forms import SUBMISSION_STATES, Form, FormSubmission
from mailroom.models.idempotency import IdempotencyKey
from mailroom.models.jobs import Job
from mailroom.models.lists import ListMember, MailingList
from mailroom.models.media import MediaFile
from mailroom.models.platform_imports import PlatformImport
from mailroom.models.ratelimit import RateLimitHit
from mailroom.models.rss import FEED_STATUSES, RssFeed, RssSeenItem
from mailroom.models.scratch import BulkSelection, ImportStaging
from mailroom.models.segments import Segment
from mailroom.models.sending import (
    PRIORITY_AUTOMATION,
    PRIORITY_CAMPAIGN,
    PRIORITY_TRANSACTIONAL,
    SEND_KINDS,
    SEND_STATUSES,
    SendLog,
    SendMeter,
)
from mailroom.models.suppressions import REASON_STRENGTH, Suppression
from mailroom.models.templates import Template
from mailroom.models.tracking import HIT_KINDS, REPORT_KINDS, DeliveryReport, TrackingHit
from mailroom.models.webhooks import WebhookDelivery, WebhookEndpoint
from mailroom.models.workers import WorkerProcess

__all__ = [
    "ASSISTANT_KINDS",
    "AUTOMATION_STATUSES",
    "CAMPAIGN_STATUSES",
    "CART_STATUSES",
    "CONTACT_STATUSES",
    "DOMAIN_STATUSES",
    "FEED_STATUSES",
    "HIT_KINDS",
    "ORDER_STATUSES",
    "PRIORITY_AUTOMATION",
    "PRIORITY_CAMPAIGN",
    "PRIORITY_TRANSACTIONAL",
    "PURCHASE_STATUSES",
    "REASON_STRENGTH",
    "REPORT_KINDS",
    "RUN_STATES",
    "SEND_KINDS",
    "SEND_STATUSES",
    "STORE_PLATFORMS",
    "SUBMISSION_STATES",
    "Account",
    "ApiKey",
    "Assistant",
    "AssistantGrant",
    "AssistantToken",
    "AuditEntry",
    "Automation",
    "AutomationRun",
    "Blueprint",
    "BulkSelection",
    "Campaign",
    "Cart",
    "Contact",
    "ContactCounts",
    "ContactTag",
    "CustomFieldDefinition",
    "CustomerProduct",
    "CustomerTotals",
    "DashboardSession",
    "DeliveryReport",
    "DmarcRecord",
    "DmarcReport",
    "Event",
    "Form",
    "FormSubmission",
    "IdempotencyKey",
    "ImportStaging",
    "Job",
    "ListMember",
    "MailingList",
    "MediaFile",
    "OAuthClient",
    "OAuthCode",
    "OAuthRequest",
    "Order",
    "OrderLine",
    "Person",
    "PlatformImport",
    "Product",
    "RateLimitHit",
    "RssFeed",
    "RssSeenItem",
    "Segment",
    "SendLog",
    "SendMeter",
    "SendingDomain",
    "SendingSettings",
    "Store",
    "StoreDelivery",
    "Suppression",
    "Tag",
    "Template",
    "TrackingHit",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WorkerProcess",
    "Workspace",
    "WorkspaceMember",
    "search_text",
]
