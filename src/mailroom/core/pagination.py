"""Page-number pagination: `page` from 1, `limit` 1-100 (default 50), and the pagination object."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class PageParams:
    page: int = 1
    limit: int = 50

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.limit


class Pagination(BaseModel):
    page: int
    limit: int
    total: int
    total_pages: int

    @classmethod
    def of(cls, params: PageParams, total: int) -> Pagination:
        pages = (total + params.limit - 1) // params.limit if total else 0
        return cls(page=params.page, limit=params.limit, total=total, total_pages=pages)
