"""A segment's e-commerce conditions (`ecommerce.*`) as SQL on `contacts`, for `Compiler`.

A contact's orders are those naming it (`contact_id`) in any store of the workspace. Cancelled
and refunded orders are not purchases: they count in no figure and match neither `purchased`
nor `last_order`. A contact without orders has spent 0 in 0 orders and has no last order. A
cart counts as abandoned while its status says so (an order converting it later ends that).

Each condition is a subquery of the one statement, never a list made in Python. Its shape is
chosen for what it reads, with or without planner statistics (SQLite databases have none;
measured with bench/bench_ecommerce_segment.py):
- total spent, number of orders and last order read the contact's `CustomerTotals` row (kept
  from its orders as they change), never its orders: correlated EXISTS on its primary key,
  which PostgreSQL turns into a semi-join over the (workspace_id, figure, contact_id) index
  range and SQLite into one probe per contact. A figure 0 satisfies (`lt 5`, `eq 0`) is
  NOT EXISTS of a row that fails it: a contact without a row has 0 and 0;
- `purchased` reads the buyers of the product, or of each product of the category, from
  `CustomerProduct` (one row per contact and product bought), by its (store_id, product_id,
  last_purchased_at, contact_id) index alone. On PostgreSQL the stores and the category's
  products are `= ANY(ARRAY(...))`: estimated as a few values, they become index keys (a
  plain `IN (SELECT ...)` of products is estimated at half the catalogue and plans a scan of
  every row);
- abandoned carts are one pass over the workspace's abandoned carts (a probe per contact
  would, without statistics, take the (status, updated_at) index and read every abandoned
  cart per contact).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    String,
    any_,
    exists,
    func,
    literal,
    literal_column,
    select,
    tuple_,
)

from mailroom.core.dbtypes import UTCDateTime
from mailroom.models import (
    Cart,
    Contact,
    CustomerProduct,
    CustomerTotals,
    Product,
    Store,
)
from mailroom.segments.rules import Condition

COMPARE = {
    "eq": lambda a, b: a == b,
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}


class Commerce:
    def __init__(self, pg: bool, workspace_id: str, now: datetime) -> None:
        self.pg = pg
        self.workspace_id = workspace_id
        self.now = now

    def condition(self, c: Condition) -> ColumnElement[bool]:
        if c.field in ("total_spent", "orders_count"):
            return self._figure(c.field, c.op, c.value)
        if c.field == "last_order":
            return self._last_order(c.op, c.value)
        if c.field == "purchased":
            return self._purchased(c.op, *c.value)
        return self._abandoned(c.value)

    def _since(self, days: int) -> Any:
        return literal(self.now - timedelta(days=days), UTCDateTime())

    def _totals(self, test: ColumnElement[bool]) -> ColumnElement[bool]:
        """The contact's purchase figures pass `test`."""
        return exists().where(
            CustomerTotals.contact_id == Contact.id,
            CustomerTotals.workspace_id == self.workspace_id,
            test,
        )

    def _figure(self, name: str, op: str, value: int) -> ColumnElement[bool]:
        """Total spent (cents) or number of purchases compared with `value`; both are 0 for
        a contact without purchases (and without a totals row)."""
        column = (
            CustomerTotals.total_spent if name == "total_spent" else CustomerTotals.orders_count
        )
        test = COMPARE[op](column, literal(value, BigInteger()))
        if COMPARE[op](0, value):
            return ~self._totals(~test)
        return self._totals(test)

    def _last_order(self, op: str, days: int) -> ColumnElement[bool]:
        since = self._since(days)
        if op == "within_last":
            return self._totals(CustomerTotals.last_order_at >= since)
        # before_last: bought, but not in the last `days`
        return self._totals(CustomerTotals.last_order_at < since)

    def _purchased(self, op: str, wanted: str, days: int | None) -> ColumnElement[bool]:
        """The contact bought the product (its id in any of the workspace's stores) or a
        product of the workspace in the category: its `CustomerProduct` rows (bought within
        `days`: its last purchase of it was)."""
        bought = CustomerProduct
        stores = select(Store.id).where(Store.workspace_id == self.workspace_id)
        # Scoped by the workspace's stores (or its products' stores): a condition on the
        # rows' own workspace_id would make PostgreSQL read each row, not the index alone.
        such: list[ColumnElement[bool]] = []
        if op == "product":
            such += [self._among(bought.store_id, stores), bought.product_id == wanted]
        elif self.pg:
            ids = select(Product.external_id).where(*self._in_category(wanted))
            exact = exists().where(
                Product.store_id == bought.store_id,
                Product.external_id == bought.product_id,
                *self._in_category(wanted),
            )
            such += [
                self._among(bought.store_id, stores),
                self._among(bought.product_id, ids),
                exact,
            ]
        else:
            products = select(Product.store_id, Product.external_id).where(
                *self._in_category(wanted)
            )
            such.append(tuple_(bought.store_id, bought.product_id).in_(products))
        if days is not None:
            such.append(bought.last_purchased_at >= self._since(days))
        return Contact.id.in_(select(bought.contact_id).where(*such))

    def _among(self, column: Any, values: Any) -> Any:
        if self.pg:  # an InitPlan array: estimated as a few values, read as index keys
            return column == any_(func.array(values.scalar_subquery()))
        return column.in_(values)

    def _in_category(self, category: str) -> list[ColumnElement[bool]]:
        """The workspace's products with the category (any case: `category` is lower-cased,
        and SQL's lower() folds the stored names)."""
        if self.pg:
            names = func.jsonb_array_elements_text(Product.categories).table_valued("value")
        else:
            names = func.json_each(Product.categories).table_valued("value")
        named = exists(
            select(literal_column("1"))
            .select_from(names)
            .where(func.lower(names.c.value) == literal(category, String()))
        )
        return [Product.workspace_id == self.workspace_id, named]

    def _abandoned(self, days: int | None) -> ColumnElement[bool]:
        carts = select(Cart.contact_id).where(
            Cart.workspace_id == self.workspace_id, Cart.status == "abandoned"
        )
        if days is not None:
            carts = carts.where(Cart.abandoned_at >= self._since(days))
        return Contact.id.in_(carts)
