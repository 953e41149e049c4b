"""Property-based tests of custom-field typing (spec, CustomFields rules 3-4 and the scan's type
inference), on the pure functions in `mailroom.custom_fields.values`."""

from __future__ import annotations

import calendar
import math
from datetime import UTC, date, datetime, time

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mailroom.core.errors import ApiError
from mailroom.custom_fields import values as v

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

dates = st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31))
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
safe_ints = st.integers(min_value=-(2**53), max_value=2**53)
# The numbers a value may be (the document's bound: past 2**53 no double is exact).
safe_floats = st.floats(
    allow_nan=False, allow_infinity=False, min_value=-(2.0**53), max_value=2.0**53
)


def impossible_date(year: int, month: int, day: int) -> bool:
    if not 1 <= month <= 12:
        return True
    return not 1 <= day <= calendar.monthrange(year, month)[1]


impossible_parts = st.tuples(
    st.integers(min_value=1000, max_value=9999),
    st.integers(min_value=0, max_value=99),
    st.integers(min_value=0, max_value=99),
).filter(lambda t: impossible_date(*t))

# ---------------------------------------------------------------- dates


@FAST
@given(dates)
def test_parse_date_accepts_iso_dates(d):
    assert v.parse_date(d.isoformat()) == d.isoformat()


@FAST
@given(dates)
def test_parse_date_accepts_dd_mm_yyyy(d):
    padded = f"{d.day:02d}/{d.month:02d}/{d.year:04d}"
    assert v.parse_date(padded) == d.isoformat()


@FAST
@given(dates, st.times(), st.sampled_from(["", "Z", "+00:00"]))
def test_parse_date_accepts_iso_date_times(d, t, suffix):
    stamp = datetime.combine(d, t).isoformat() + suffix
    assert v.parse_date(stamp) == d.isoformat()


@FAST
@given(dates, st.times())
def test_parse_date_of_aware_utc_datetime(d, t):
    stamp = datetime.combine(d, t.replace(tzinfo=None), tzinfo=UTC).isoformat()
    assert v.parse_date(stamp) == d.isoformat()


@FAST
@given(impossible_parts)
def test_parse_date_refuses_impossible_dates(parts):
    year, month, day = parts
    assert v.parse_date(f"{year:04d}-{month:02d}-{day:02d}") is None
    assert v.parse_date(f"{day:02d}/{month:02d}/{year:04d}") is None
    assert v.parse_date(f"{year:04d}-{month:02d}-{day:02d}T12:00:00Z") is None


@FAST
@given(st.one_of(st.integers(), finite_floats, st.booleans(), st.none(), st.lists(st.integers())))
def test_parse_date_refuses_non_strings(value):
    assert v.parse_date(value) is None


@FAST
@given(st.text(alphabet=st.characters(categories=["L"]), min_size=1, max_size=20))
def test_parse_date_refuses_words(text):
    assert v.parse_date(text) is None


@FAST
@given(dates)
def test_date_type_coerces_every_form_to_the_same_value(d):
    iso = d.isoformat()
    forms = [iso, f"{d.day:02d}/{d.month:02d}/{d.year:04d}", f"{iso}T08:30:00Z"]
    assert {v.coerce("date", None, form) for form in forms} == {iso}
    assert all(v.fits("date", None, form) for form in forms)


# ---------------------------------------------------------------- numbers


@FAST
@given(st.one_of(safe_ints, safe_floats))
def test_parse_number_keeps_finite_numbers(x):
    result = v.parse_number(x)
    assert result == x
    assert type(result) is type(x)


@FAST
@given(safe_ints)
def test_parse_number_round_trips_integer_strings(n):
    result = v.parse_number(str(n))
    assert result == n
    assert isinstance(result, int) and not isinstance(result, bool)


@FAST
@given(safe_floats)
def test_parse_number_round_trips_float_strings(x):
    result = v.parse_number(repr(x))
    assert isinstance(result, int | float) and not isinstance(result, bool)
    assert result == x


@FAST
@given(safe_floats, st.sampled_from(["", " ", "  "]))
def test_parse_number_ignores_surrounding_spaces(x, pad):
    assert v.parse_number(f"{pad}{x!r}{pad}") == x


@FAST
@given(st.floats(min_value=2.0**53, exclude_min=True, allow_infinity=False), st.booleans())
def test_numbers_past_two_to_the_53_are_refused(x, negative):
    value = -x if negative else x
    assert not v.is_number(value)
    assert v.parse_number(value) is None
    assert v.parse_number(repr(value)) is None


@FAST
@given(st.booleans())
def test_parse_number_refuses_booleans(b):
    assert v.parse_number(b) is None
    assert v.coerce("number", None, b) is None


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "inf", "NaN", "1e999", "-1e999"])
def test_parse_number_refuses_non_finite(value):
    assert v.parse_number(value) is None


@FAST
@given(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=30)
)
def test_parse_number_refuses_non_numeric_text(text):
    """Printable ASCII text that Python cannot read as a number is not a numeric string."""
    try:
        float(text)
        numeric = True
    except ValueError:
        numeric = False
    assume(not numeric)
    assert v.parse_number(text) is None


# ---------------------------------------------------------------- booleans


def case_variants(word: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda flags: "".join(c.upper() if up else c for c, up in zip(word, flags, strict=True))
    )


@FAST
@given(st.sampled_from(["yes", "true"]).flatmap(case_variants))
def test_parse_boolean_true_words(word):
    assert v.parse_boolean(word) is True


@FAST
@given(st.sampled_from(["no", "false"]).flatmap(case_variants))
def test_parse_boolean_false_words(word):
    assert v.parse_boolean(word) is False


@FAST
@given(st.booleans())
def test_parse_boolean_keeps_booleans(b):
    assert v.parse_boolean(b) is b


@FAST
@given(st.one_of(st.integers(), finite_floats, st.none()))
def test_parse_boolean_refuses_numbers(value):
    assert v.parse_boolean(value) is None


@FAST
@given(st.text(max_size=10))
def test_parse_boolean_refuses_other_text(text):
    assume(text.strip().lower() not in {"yes", "no", "true", "false"})
    assert v.parse_boolean(text) is None


# ---------------------------------------------------------------- dropdown and empty strings


@FAST
@given(
    st.lists(st.text(min_size=1, max_size=20).filter(str.strip), min_size=1, max_size=10).map(
        lambda opts: [o.strip() for o in opts]
    )
)
def test_dropdown_takes_each_of_its_options(options):
    for option in options:
        assert v.coerce("dropdown", options, option) == option


@FAST
@given(st.sampled_from(["number", "boolean", "date", "dropdown"]))
def test_empty_string_clears_every_typed_field(field_type):
    assert v.coerce(field_type, ["A"], "") is v.CLEAR


@FAST
@given(st.one_of(st.text(max_size=200), st.integers(), finite_floats, st.booleans()))
def test_text_type_takes_any_scalar_unchanged(value):
    assert v.coerce("text", None, value) == value


# ---------------------------------------------------------------- shape rules


scalar = st.one_of(st.text(max_size=200), safe_ints, safe_floats, st.booleans())
keys = st.text(min_size=1, max_size=64).filter(lambda k: k not in v.RESERVED_KEYS)


@FAST
@given(st.dictionaries(keys, st.one_of(scalar, st.none()), max_size=50))
def test_check_shape_accepts_flat_scalar_objects(obj):
    assert v.check_shape(obj) == obj


@FAST
@given(
    st.dictionaries(keys, scalar, max_size=10),
    keys,
    st.one_of(st.lists(scalar, max_size=3), st.dictionaries(keys, scalar, max_size=3)),
)
def test_check_shape_refuses_arrays_and_objects(obj, key, bad):
    with pytest.raises(ApiError) as refused:
        v.check_shape({**obj, key: bad})
    assert refused.value.status == 400
    assert refused.value.message == f"custom_fields.{key} must be a string, number or boolean"


@FAST
@given(keys, st.text(min_size=201, max_size=400))
def test_check_shape_refuses_long_strings(key, text):
    with pytest.raises(ApiError) as refused:
        v.check_shape({key: text})
    assert refused.value.message == f"custom_fields.{key} must be 200 characters or fewer"


@FAST
@given(st.text(min_size=65, max_size=100))
def test_check_shape_refuses_long_keys(key):
    with pytest.raises(ApiError) as refused:
        v.check_shape({key: "x"})
    assert refused.value.message == "custom_fields keys must be 1-64 characters"


@FAST
@given(st.integers(min_value=51, max_value=80))
def test_check_shape_refuses_more_than_50_keys(n):
    with pytest.raises(ApiError) as refused:
        v.check_shape({f"k{i}": i for i in range(n)})
    assert refused.value.message == "custom_fields may have at most 50 keys"


@FAST
@given(st.integers(min_value=10**309, max_value=10**400))
def test_huge_integers_do_not_crash_the_shape_check(n):
    """Rule 3 asks for a finite number. An integer no float can hold is either accepted or
    refused with the rule-3 400; any other exception would be a 500."""
    try:
        v.check_shape({"n": n})
    except ApiError as refused:
        assert refused.status == 400
        assert refused.message == "custom_fields.n must be a string, number or boolean"


# ---------------------------------------------------------------- scan inference


@FAST
@given(st.lists(st.booleans(), min_size=1, max_size=20))
def test_infer_boolean(values):
    assert v.infer_type(values) == "boolean"


@FAST
@given(st.lists(st.one_of(safe_ints, finite_floats), min_size=1, max_size=20))
def test_infer_number(values):
    assert v.infer_type(values) == "number"


@FAST
@given(st.lists(dates.map(date.isoformat), min_size=1, max_size=20))
def test_infer_date(values):
    assert v.infer_type(values) == "date"


@FAST
@given(
    st.lists(
        st.one_of(st.booleans(), safe_ints, dates.map(date.isoformat)), min_size=2, max_size=20
    ),
)
def test_infer_mixed_is_text(values):
    kinds = {
        "bool" if isinstance(x, bool) else "number" if isinstance(x, int) else "date"
        for x in values
    }
    assume(len(kinds) > 1)
    assert v.infer_type(values) == "text"


@FAST
@given(st.lists(dates.map(date.isoformat), min_size=1, max_size=10), impossible_parts)
def test_one_impossible_date_makes_text(values, parts):
    year, month, day = parts
    assert v.infer_type([*values, f"{year:04d}-{month:02d}-{day:02d}"]) == "text"


@FAST
@given(st.lists(dates, min_size=1, max_size=10))
def test_other_date_forms_infer_text(values):
    """Scan infers `date` only from `YYYY-MM-DD` strings."""
    assert v.infer_type([f"{d.day:02d}/{d.month:02d}/{d.year:04d}" for d in values]) == "text"


def test_infer_nothing_is_text():
    assert v.infer_type([]) == "text"


@FAST
@given(st.lists(st.text(max_size=20), min_size=1, max_size=10))
def test_infer_arbitrary_text(values):
    assume(not all(v.parse_date(x) == x for x in values))
    assert v.infer_type(values) == "text"


# ---------------------------------------------------------------- default label


@FAST
@given(st.from_regex(r"[a-z][a-z0-9]{0,9}(_[a-z0-9]{1,9}){0,4}", fullmatch=True))
def test_default_label_spaces_and_capital(key):
    label = v.default_label(key)
    assert label == key.replace("_", " ").capitalize()
    assert len(label) <= 80


@FAST
@given(st.from_regex(r"[A-Za-z0-9_]{1,64}", fullmatch=True).filter(lambda k: k.strip("_")))
def test_default_label_fits_and_has_no_underscores(key):
    label = v.default_label(key)
    assert "_" not in label
    assert 1 <= len(label) <= 80
    assert label[0] == label[0].upper()


@pytest.mark.parametrize("time_of_day", [time(0, 0), time(23, 59, 59)])
def test_date_time_boundaries_keep_the_written_date(time_of_day):
    stamp = datetime.combine(date(2024, 12, 31), time_of_day).isoformat() + "Z"
    assert v.parse_date(stamp) == "2024-12-31"
