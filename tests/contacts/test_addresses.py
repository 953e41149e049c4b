"""The bounded address check of uploads gives the same verdict as the API's own check
(`core.emails.is_valid_email`) on every address, usual or not, and stops after its budget."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mailroom.contacts import addresses
from mailroom.contacts.addresses import AddressCheck
from mailroom.core.emails import is_valid_email
from mailroom.core.errors import ApiError

PIECES = [*'abz09._-+!"()@ ,;:[]\\', "ü", "é", "ß", "日本", "e\u0301", "\u00ad", "\uff0e"]
PIECES += ["xn--", "..", "a" * 30, "ü" * 25]
LABELS = ["com", "de", "a", "ü", "münchen", "xn--tda", "-a", "a-", "_x", "日本", "a" * 63]
LABELS += ["ü" * 40, "test", "invalid", "", "e\u0301", "ＡＢ"]
part = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
domain = st.lists(st.sampled_from(LABELS), min_size=1, max_size=5).map(".".join)


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(local=part, host=st.one_of(domain, part))
@example(local="a" * 90, host="com.a")  # too long before the @, at an unusual domain
def test_same_verdict_as_the_api(monkeypatch_budget, local, host):
    email = f"{local}@{host}"
    assert AddressCheck()(email) == is_valid_email(email), email


@pytest.fixture
def monkeypatch_budget(monkeypatch):
    monkeypatch.setattr(addresses, "MAX_FULL_CHECKS", 10**9)


def test_budget_counts_distinct_domains_once():
    check = AddressCheck("file")
    for i in range(3000):  # 3,000 addresses at 10 unusual domains: 10 full checks
        assert check(f"p{i}@dö{i % 10}.de")
    assert check.full_checks == 10
    with pytest.raises(ApiError) as refused:
        for i in range(addresses.MAX_FULL_CHECKS + 1):
            check(f"p@x{i}ö.de")
    assert refused.value.status == 400
