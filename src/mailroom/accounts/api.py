from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter

from mailroom.accounts.schemas import PlanLimits, WhoAmI
from mailroom.core.auth import PERMISSIONS, Principal, authenticated

router = APIRouter(prefix="/api/v1/account", tags=["Account"])


@router.get(
    "",
    response_model=WhoAmI,
    summary="Describe the calling key",
    description="The workspace and account this key belongs to, its permissions, and the "
    "limits of the account's plan (`null` means unlimited). Any valid key may call it.",
)
async def get_account(principal: Annotated[Principal, authenticated()]) -> WhoAmI:
    return WhoAmI(
        account_id=principal.account_id,
        workspace_id=principal.workspace_id,
        key_id=principal.key_id,
        permissions=[p for p in PERMISSIONS if p in principal.permissions],
        plan=PlanLimits.model_validate(principal.plan.as_dict()),
    )
