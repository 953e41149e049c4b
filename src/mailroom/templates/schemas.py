from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mailroom.core.loose import Doc, body_config, name_field, nullable, text
from mailroom.core.pagination import Pagination

MERGE_TAGS = (
    "Merge tags (Jinja, sandboxed): `{{ first_name }}`, `{{ last_name }}`, `{{ email }}`, "
    "`{{ custom_fields.<key> }}`, `{{ workspace.name }}`, `{{ unsubscribe_url }}`, "
    "`{{ preferences_url }}`, `{{ webview_url }}`, fallbacks such as "
    '`{{ first_name | default("there") }}`. A missing value renders as nothing.'
)

SUBJECT = Doc(nullable(text(200)))
PREHEADER = Doc(nullable(text(200)))
HTML = Doc(nullable(text(500_000)))
TEXT = Doc(nullable(text(200_000)))


class TemplateCreate(BaseModel):
    model_config = body_config(
        "name",
        example={
            "name": "Welcome",
            "subject": "Welcome, {{ first_name | default('friend') }}",
            "html_content": "<p>Hi {{ first_name | default('there') }},</p>",
        },
    )
    name: Annotated[Any, Doc(name_field(100))] = Field(
        None, description="Up to 100 characters, unique ignoring case."
    )
    subject: Annotated[Any, SUBJECT] = Field(None, description="Up to 200 characters.")
    preheader: Annotated[Any, PREHEADER] = Field(
        None, description="Inbox preview text, up to 200 characters; hidden at the top."
    )
    html_content: Annotated[Any, HTML] = Field(
        None, description="Up to 500,000 characters (413 past it). `<style>` rules are inlined."
    )
    text_content: Annotated[Any, TEXT] = Field(
        None,
        description="Up to 200,000 characters (413 past it). Empty: derived from the HTML.",
    )


class TemplateUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    name: Annotated[Any, Doc(name_field(100))] = None
    subject: Annotated[Any, SUBJECT] = None
    preheader: Annotated[Any, PREHEADER] = None
    html_content: Annotated[Any, HTML] = None
    text_content: Annotated[Any, TEXT] = None


class TemplateOut(BaseModel):
    id: str
    name: str
    subject: str
    preheader: str
    html_content: str
    text_content: str
    created_at: datetime
    updated_at: datetime


class TemplateEnvelope(BaseModel):
    template: TemplateOut


class TemplateList(BaseModel):
    templates: list[TemplateOut]
    pagination: Pagination


class TemplateDeleted(BaseModel):
    success: bool
    id: str


class TemplatePreviewRequest(BaseModel):
    model_config = body_config(forbid_extra=True)
    contact_id: Annotated[Any, Doc(nullable(text()))] = Field(
        None,
        description="Render as this contact of the workspace; absent, null or empty: sample "
        "values.",
    )


class TemplatePreview(BaseModel):
    subject: str
    html: str = Field(description="With its CSS inlined and the preheader hidden at the top.")
    text: str = Field(description="The text part; derived from the HTML when it has none.")
