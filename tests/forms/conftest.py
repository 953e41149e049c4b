"""The sending fixtures (sink, driver) for the signup-form tests."""

from tests.sending.conftest import driver, sink  # noqa: F401
