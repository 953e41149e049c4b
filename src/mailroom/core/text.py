"""Small text rules shared by every domain."""

from __future__ import annotations


def fold(value: str) -> str:
    """The case-insensitive key of a name (unicode-aware: `Straße` == `STRASSE`)."""
    return value.casefold()


def contains_pattern(term: str) -> str:
    """A LIKE pattern matching `term` anywhere, its wildcards taken literally (escape `\\`)."""
    term = "".join(ch for ch in term if ch.isprintable())  # see models.contacts.search_text
    escaped = fold(term).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
