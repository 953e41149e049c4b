"""Property: a rule's count equals the number of contacts a plain Python reading of the same
rule selects, over random contacts (odd stored values included) and random nested rules, on
whichever database the run uses."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert

from mailroom.core.emails import email_hash
from mailroom.core.ids import new_id
from mailroom.custom_fields.values import match_option, parse_boolean, parse_date, parse_number
from mailroom.models import Contact, ContactTag, CustomFieldDefinition, Tag, search_text

NOW = datetime.now(UTC)
PLAN_OPTIONS = ["Free", "Pro"]
TYPES = {"score": "number", "vip": "boolean", "plan": "dropdown", "nick": "text", "born": "date"}
WORDS = ["ann", "Ann", "ANNA", "émile", "Émile", "bo", "x_y", "50%", "import", "API", "fr", "en"]
STATUSES = ["subscribed", "unsubscribed", "bounced", "complained", "archived"]
TAGS = ["t0", "t1"]

# ---------------------------------------------------------------- random contacts

stored = {
    "score": st.one_of(
        st.integers(-5, 50), st.sampled_from([7.5, -0.5, " 42 ", "1e1", "abc", "+3", True])
    ),
    "vip": st.sampled_from([True, False, "yes", " No", "maybe", 1]),
    "plan": st.sampled_from(["Pro", "pro", "Free", "Gold"]),
    "nick": st.sampled_from(["Ann", "anna b", "BO", "x_y", "50%", 42, True, ""]),
    "fav-color": st.sampled_from(["Red", "red wine", "blue"]),
    "born": st.sampled_from(
        ["1990-03-15", "15/3/1988", "2024-02-29", "2023-02-30", "abc", "1999-12-31T10:00:00"]
    )
    | st.integers(-40, 40).map(
        lambda d: (NOW.date() + timedelta(days=d)).replace(year=1984).isoformat()
    ),
}
person = st.fixed_dictionaries(
    {
        "first": st.sampled_from(["Ann", "anna", "Émile", "Bo", "", "x_y"]),
        "last": st.sampled_from(["Smith", "ÉMILE", "", "50%"]),
        "source": st.sampled_from(["import", "Import", "API", "form", "50%"]),
        "language": st.sampled_from([None, "en", "fr"]),
        "status": st.sampled_from(STATUSES),
        "age": st.integers(0, 60 * 86_400 // 3600).map(lambda h: h * 3600 + 1800),
        "custom": st.fixed_dictionaries({}, optional=stored),
        "tags": st.sets(st.sampled_from(TAGS)),
    }
)

# ---------------------------------------------------------------- random rules

TEXT_OPS = [
    "eq",
    "neq",
    "in",
    "contains",
    "not_contains",
    "starts_with",
    "ends_with",
    "is_set",
    "is_not_set",
]


def _text_condition(field: str) -> st.SearchStrategy[dict[str, Any]]:
    def make(op: str, words: list[str]) -> dict[str, Any]:
        if op in ("is_set", "is_not_set"):
            return {"field": field, "op": op}
        return {"field": field, "op": op, "value": words if op == "in" else words[0]}

    return st.builds(
        make, st.sampled_from(TEXT_OPS), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)
    )


def _leaf(field: str, op: Any, value: Any = None) -> st.SearchStrategy[dict[str, Any]]:
    ops = op if isinstance(op, st.SearchStrategy) else st.just(op)
    if value is None:
        return ops.map(lambda o: {"field": field, "op": o})
    return st.builds(lambda o, v: {"field": field, "op": o, "value": v}, ops, value)


day_value = st.integers(0, 60).map(lambda d: (NOW.date() - timedelta(days=d)).isoformat())
conditions = st.one_of(
    *(_text_condition(f) for f in ("email", "first_name", "last_name", "source", "language")),
    _text_condition("custom_fields.nick"),
    _text_condition("custom_fields.fav-color"),
    _leaf("status", st.sampled_from(["eq", "neq"]), st.sampled_from(STATUSES)),
    _leaf("status", "in", st.lists(st.sampled_from(STATUSES), min_size=1, max_size=3)),
    _leaf("created_at", st.sampled_from(["within_last", "not_within_last"]), st.integers(1, 60)),
    _leaf("created_at", st.sampled_from(["before", "after"]), day_value),
    _leaf(
        "custom_fields.score",
        st.sampled_from(["eq", "neq", "gt", "gte", "lt", "lte"]),
        st.integers(-5, 50) | st.sampled_from([7.5, 42, 10]),
    ),
    _leaf("custom_fields.vip", st.sampled_from(["is_true", "is_false"])),
    _leaf("custom_fields.plan", st.sampled_from(["eq", "neq"]), st.sampled_from(["pro", "FREE"])),
    _leaf("custom_fields.plan", "in", st.lists(st.sampled_from(PLAN_OPTIONS), min_size=1)),
    _leaf(
        "custom_fields.born",
        st.sampled_from(["before", "after"]),
        st.sampled_from(["1989-01-01", "2000-01-01", "1984-06-30"]),
    ),
    _leaf("custom_fields.born", "within_last", st.integers(1, 20_000)),
    _leaf("custom_fields.born", "anniversary_in", st.integers(0, 60) | st.just(365)),
    _leaf(
        "tags",
        st.sampled_from(["has_any", "has_all", "has_none"]),
        st.lists(st.sampled_from(TAGS), min_size=1, max_size=2),
    ),
)
rules = (
    st.recursive(
        conditions,
        lambda inner: st.builds(
            lambda match, items: {"match": match, "conditions": items},
            st.sampled_from(["all", "any"]),
            st.lists(inner, min_size=1, max_size=3),
        ),
        max_leaves=6,
    )
    .map(lambda r: r if "match" in r else {"match": "all", "conditions": [r]})
    .filter(lambda r: _depth(r) <= 3)
)


def _depth(r: dict[str, Any]) -> int:
    if "conditions" not in r:
        return 0
    return 1 + max(_depth(c) for c in r["conditions"])


# ---------------------------------------------------------------- the plain Python reading


def _text_form(value: Any) -> str:
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


def _text(fold: Any, have: str, op: str, value: Any) -> bool:
    have = fold(have)
    if op == "is_set":
        return have != ""
    if op == "is_not_set":
        return have == ""
    if op == "in":
        return have in {fold(v) for v in value}
    want = fold(value)
    return {
        "eq": have == want,
        "neq": have != want,
        "contains": want in have,
        "not_contains": want not in have,
        "starts_with": have.startswith(want),
        "ends_with": have.endswith(want),
    }[op]


def _next_anniversary(day: date, today: date) -> date:
    for year in (today.year, today.year + 1):
        try:
            when = date(year, day.month, day.day)
        except ValueError:  # 29 February in a common year: 1 March
            when = date(year, 3, 1)
        if when >= today:
            return when
    raise AssertionError


def holds(c: dict[str, Any], p: dict[str, Any]) -> bool:
    if "conditions" in c:
        results = [holds(x, p) for x in c["conditions"]]
        return all(results) if c.get("match", "all") == "all" else any(results)
    field, op, value = c["field"], c["op"], c.get("value")
    today = datetime.now(UTC).date()
    if field in ("email", "first_name", "last_name"):
        return _text(str.casefold, p[field], op, value)
    if field in ("source", "language"):
        return _text(str.lower, p[field] or "", op, value)
    if field == "status":
        return {"eq": p["status"] == value, "neq": p["status"] != value}.get(
            op, p["status"] in value
        )
    if field == "created_at":
        at = p["created_at"]
        if op in ("within_last", "not_within_last"):
            inside = at >= datetime.now(UTC) - timedelta(days=value)
            return inside if op == "within_last" else not inside
        start = datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC)
        return at < start if op == "before" else at >= start + timedelta(days=1)
    if field == "tags":
        held = p["tags"] & set(value)
        return {"has_any": bool(held), "has_all": held == set(value), "has_none": not held}[op]
    key = field.removeprefix("custom_fields.")
    raw = p["custom"].get(key)
    kind = TYPES.get(key, "text")
    if kind == "text":
        return _text(str.lower, _text_form(raw), op, value)
    if kind == "number":
        n = parse_number(raw) if raw is not None else None
        if op == "neq":
            return raw is None or (n is not None and n != value)
        if n is None:
            return False
        return {
            "eq": n == value,
            "gt": n > value,
            "gte": n >= value,
            "lt": n < value,
            "lte": n <= value,
        }[op]
    if kind == "boolean":
        return parse_boolean(raw) is (op == "is_true")
    if kind == "dropdown":
        fits = match_option(raw, PLAN_OPTIONS) if raw is not None else None
        wanted = [v.lower() for v in (value if op == "in" else [value])]
        if op == "neq":
            return raw is None or (fits is not None and raw.lower() not in wanted)
        return fits is not None and raw.lower() in wanted
    born = parse_date(raw)
    if born is None:
        return False
    day = date.fromisoformat(born)
    if op == "before":
        return born < value
    if op == "after":
        return born > value
    if op == "within_last":
        return today - timedelta(days=value) <= day <= today
    return (_next_anniversary(day, today) - today).days <= value


# ---------------------------------------------------------------- the property


async def _seed(db, workspace_id: str, people: list[dict[str, Any]]) -> None:
    tag_ids = {name: new_id() for name in TAGS}
    async with db.transaction() as session:
        await session.execute(
            insert(CustomFieldDefinition),
            [
                {
                    "workspace_id": workspace_id,
                    "key": key,
                    "label": key,
                    "type": kind,
                    "options": PLAN_OPTIONS if kind == "dropdown" else None,
                    "position": i,
                }
                for i, (key, kind) in enumerate(TYPES.items())
            ],
        )
        await session.execute(
            insert(Tag),
            [
                {
                    "id": tid,
                    "workspace_id": workspace_id,
                    "name": n,
                    "name_key": n,
                    "color": "#000000",
                }
                for n, tid in tag_ids.items()
            ],
        )
        links = []
        for i, p in enumerate(people):
            contact_id = new_id()
            p["email"] = f"{p['first'].lower() or 'p'}{i}@example.org"
            p["first_name"], p["last_name"] = p["first"], p["last"]
            p["created_at"] = NOW - timedelta(seconds=p["age"])
            await session.execute(
                insert(Contact).values(
                    id=contact_id,
                    workspace_id=workspace_id,
                    email=p["email"],
                    email_hash=email_hash("k", p["email"]),
                    first_name=p["first"],
                    last_name=p["last"],
                    search_text=search_text(p["email"], p["first"], p["last"]),
                    status=p["status"],
                    custom_fields=p["custom"],
                    source=p["source"],
                    language=p["language"],
                    subscribed_at=p["created_at"],
                    created_at=p["created_at"],
                    updated_at=p["created_at"],
                )
            )
            links += [
                {"contact_id": contact_id, "tag_id": tag_ids[t], "workspace_id": workspace_id}
                for t in p["tags"]
            ]
        if links:
            await session.execute(insert(ContactTag), links)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    people=st.lists(person, min_size=1, max_size=8), checks=st.lists(rules, min_size=1, max_size=4)
)
async def test_a_rules_count_is_the_contacts_python_selects(client, factory, db, people, checks):
    ws = await factory.workspace("pro", listen=False)
    await _seed(db, ws.workspace_id, people)
    listed = await client.get("/api/v1/tags", headers=ws.headers)
    tag_ids = {t["name"]: t["id"] for t in listed.json()["tags"]}
    for rule in checks:
        sent = _with_tag_ids(rule, tag_ids)
        response = await client.post(
            "/api/v1/segments/preview", json={"rules": sent}, headers=ws.headers
        )
        assert response.status_code == 200, (response.text, sent)
        expected = sum(holds(rule, p) for p in people)
        assert response.json()["count"] == expected, (rule, people)


def _with_tag_ids(rule: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    if "conditions" in rule:
        return {**rule, "conditions": [_with_tag_ids(c, ids) for c in rule["conditions"]]}
    if rule["field"] == "tags":
        return {**rule, "value": [ids[name] for name in rule["value"]]}
    return rule
