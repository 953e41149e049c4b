"""Fixtures the A/B tests borrow: the sending tests' SMTP sink and engine driver."""

from tests.sending.conftest import driver, sink  # noqa: F401 (fixtures)
