"""The sending fixtures (sink, driver) for the subscriber page tests."""

from tests.sending.conftest import driver, sink  # noqa: F401
