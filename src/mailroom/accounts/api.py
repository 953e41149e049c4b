from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request

from mailroom.accounts.schemas import PlanLimits, SendingHealth, WhoAmI
from mailroom.core.auth import PERMISSIONS, Principal
from mailroom.core.context import Context
from mailroom.core.route_auth import authenticated
from mailroom.sending import service as sending
from mailroom.web.deps import Session, get_settings_dep

router = APIRouter(prefix="/api/v1/account", tags=["Account"])


@router.get(
    "",
    response_model=WhoAmI,
    summary="Describe the calling key",
    description="The workspace and account this key (or assistant) belongs to, its "
    "permissions, and the limits of the account's plan (`null` means unlimited). Any valid key "
    "or assistant token may call it.",
)
async def get_account(
    request: Request, session: Session, principal: Annotated[Principal, authenticated()]
) -> WhoAmI:
    ctx = Context(session, principal, get_settings_dep(request))
    return WhoAmI(
        sending=SendingHealth.model_validate(await sending.state(ctx)),
        account_id=principal.account_id,
        workspace_id=principal.workspace_id,
        key_id=principal.key_id,
        assistant_id=principal.assistant_id,
        permissions=[p for p in PERMISSIONS if p in principal.permissions],
        plan=PlanLimits.model_validate(principal.plan.as_dict()),
    )
