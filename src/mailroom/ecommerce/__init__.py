"""E-commerce: a workspace's stores and what their shops send.

- `service`: stores (named, with currency, platform, abandonment delay, attribution window and
  the webhook secret shown once);
- `products`, `orders`, `carts`: upserted by the shop's own ids (`orders.upsert_many` is the
  one write path for orders: the API's PUT and batch, and the platforms' deliveries);
- `customers`: addresses on orders and carts, linked to contacts, forgotten on erasure;
- `abandon`: the worker loop that marks untouched carts abandoned;
- `values`: money (minor units, shown as "19.90"), currency, ids, links and times as sent;
- `platforms`: Shopify and WooCommerce webhook deliveries translated into upserts.
"""
