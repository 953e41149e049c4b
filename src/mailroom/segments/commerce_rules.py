"""A segment's e-commerce conditions (`ecommerce.*`) as SQL on `contacts`, for `Compiler`.

A contact's orders are those naming it (`contact_id`) in any store of the workspace. Cancelled
and refunded orders are not purchases: they count in no figure and match neither `purchased`
nor `last_order`. A contact without orders has spent 0 in 0 orders and has no last order. A
cart counts as abandoned while its status says so (an order converting it later ends that).

Each condition is a subquery of the one statement, never a list made in Python. Its shape is
chosen for what it reads, with or without planner statistics (SQLite databases have none;
measured with bench/bench_ecommerce_segment.py):
- total spent and number of orders are a scalar subquery per contact, on the (workspace_id,
  contact_id) index: PostgreSQL runs it for the contacts the rest of the rule leaves, the
  preview's first ten walk the newest contacts until ten match, and an automation's condition
  probes its one contact. (One grouped pass over all the workspace's orders, `contacts.id IN
  (... GROUP BY contact_id HAVING ...)`, counts a lone figure faster but reads every order for
  each of those, twice per preview.) `eq 0` / `lte 0` are NOT EXISTS (an anti-join);
- `purchased` starts from the product, by the lines' (store_id, product_id) index, and reads
  the lines of that product or category only, then their orders by id. On SQLite the lines
  are scoped by their own workspace_id and the orders are not: a condition on the orders'
  would tempt it into reading every order of the workspace. On PostgreSQL the stores and the
  category's products are `= ANY(ARRAY(...))`: estimated as a few values, they become index
  keys (a plain `IN (SELECT ...)` of products is estimated at half the catalogue and plans a
  scan of every line and order);
- abandoned carts are one pass over the workspace's abandoned carts (a probe per contact
  would, without statistics, take the (status, updated_at) index and read every abandoned
  cart per contact);
- `last_order` is correlated EXISTS on the (workspace_id, contact_id, placed_at) index;
  PostgreSQL turns them into semi- and anti-joins.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    String,
    and_,
    any_,
    exists,
    func,
    literal,
    literal_column,
    select,
    true,
    tuple_,
)

from mailroom.core.dbtypes import UTCDateTime
from mailroom.models import Cart, Contact, Order, OrderLine, Product, Store
from mailroom.segments.rules import Condition

# What a purchase is (as revenue counts it): cancelled and refunded orders are not.
COUNTED = ("placed", "paid", "fulfilled")
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

    def _purchases(self, days: int | None = None) -> list[ColumnElement[bool]]:
        """The workspace's purchases (placed in the last `days`)."""
        such = [Order.workspace_id == self.workspace_id, Order.status.in_(COUNTED)]
        if days is not None:
            such.append(Order.placed_at >= self._since(days))
        return such

    def _figure(self, name: str, op: str, value: int) -> ColumnElement[bool]:
        """Total spent (cents) or number of purchases compared with `value`; both are 0 for
        a contact without purchases."""
        mine = [*self._purchases(), Order.contact_id == Contact.id]
        if op == "gte" and value == 0:
            return true()
        if op in ("eq", "lte") and value == 0:
            return ~exists().where(*mine)
        figure = func.coalesce(func.sum(Order.total), 0) if name == "total_spent" else func.count()
        of_contact = select(figure).where(*mine).scalar_subquery()
        return COMPARE[op](of_contact, literal(value, BigInteger()))

    def _last_order(self, op: str, days: int) -> ColumnElement[bool]:
        mine = Order.contact_id == Contact.id
        recent = exists().where(*self._purchases(days), mine)
        if op == "within_last":
            return recent
        # before_last: bought, but not in the last `days`
        return and_(exists().where(*self._purchases(), mine), ~recent)

    def _purchased(self, op: str, wanted: str, days: int | None) -> ColumnElement[bool]:
        """A line of one of the contact's purchases is the product (its id in any of the
        workspace's stores) or a product of the workspace in the category."""
        stores = select(Store.id).where(Store.workspace_id == self.workspace_id)
        lines: list[ColumnElement[bool]] = [OrderLine.workspace_id == self.workspace_id]
        if op == "product":
            lines += [self._among(OrderLine.store_id, stores), OrderLine.product_id == wanted]
        elif self.pg:
            ids = select(Product.external_id).where(*self._in_category(wanted))
            exact = exists().where(
                Product.store_id == OrderLine.store_id,
                Product.external_id == OrderLine.product_id,
                *self._in_category(wanted),
            )
            lines += [
                self._among(OrderLine.store_id, stores),
                self._among(OrderLine.product_id, ids),
                exact,
            ]
        else:
            products = select(Product.store_id, Product.external_id).where(
                *self._in_category(wanted)
            )
            lines.append(tuple_(OrderLine.store_id, OrderLine.product_id).in_(products))
        purchase: list[ColumnElement[bool]] = [Order.status.in_(COUNTED)]
        if self.pg:  # lets one contact's check (an automation's condition) probe its orders
            purchase.append(Order.workspace_id == self.workspace_id)
        if days is not None:
            purchase.append(Order.placed_at >= self._since(days))
        buyers = (
            select(Order.contact_id)
            .select_from(OrderLine)
            .join(Order, Order.id == OrderLine.order_id)
            .where(*lines, *purchase)
        )
        return Contact.id.in_(buyers)

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
