"""Charts drawn on the server as SVG (no script, nothing to vendor): `chart_hourly.html`
draws what these functions measure out, with presentation attributes only (the pages' policy
allows no inline style), a title and a description for screen readers; pages show the same
figures as a table beside it."""

from __future__ import annotations

from typing import Any

WIDTH, HEIGHT, PAD = 720, 200, 28
OPENS, CLICKS = "#1d4ed8", "#b45309"  # both 4.5:1 or better on white


def hourly_chart(hourly: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Opens and clicks per hour (the report's `hourly`) as paired bars; None while nothing
    was opened or clicked (the page says so in words instead of an empty frame)."""
    if not any(h["opens"] or h["clicks"] for h in hourly):
        return None
    top = max([1] + [max(h["opens"], h["clicks"]) for h in hourly])
    slot = (WIDTH - 2 * PAD) / len(hourly)
    width = max(1.0, slot / 2 - 1)
    scale = (HEIGHT - 2 * PAD) / top
    bars = []
    for i, h in enumerate(hourly):
        x = PAD + i * slot
        label = f"{h['hour']:%Y-%m-%d %H:00} UTC: {h['opens']} opens, {h['clicks']} clicks"
        for offset, value, colour in ((0.0, h["opens"], OPENS), (width, h["clicks"], CLICKS)):
            tall = value * scale
            bars.append(
                {
                    "x": round(x + offset, 1),
                    "y": round(HEIGHT - PAD - tall, 1),
                    "w": round(width, 1),
                    "h": round(tall, 1),
                    "colour": colour,
                    "label": label,
                }
            )
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "pad": PAD,
        "bars": bars,
        "top": top,
        "hours": len(hourly),
        "opens": sum(h["opens"] for h in hourly),
        "clicks": sum(h["clicks"] for h in hourly),
    }


def bar_chart(
    items: list[tuple[str, int]], *, whole: int | None = None, kind: str = "opens"
) -> dict[str, Any] | None:
    """Horizontal bars, one per (label, count), drawn as <progress> elements (they reflow on a
    phone where an SVG's text would shrink): scaled to `whole` (and shown as a share of it)
    or, without one, to the largest count."""
    if not items:
        return None
    top = max([whole or 0, 1] + [n for _label, n in items])
    rows = [
        {
            "label": label,
            "value": n,
            "text": f"{n:,}" + (f" ({n * 100 / whole:.1f} %)" if whole else ""),
        }
        for label, n in items
    ]
    return {"top": top, "rows": rows, "kind": kind}
