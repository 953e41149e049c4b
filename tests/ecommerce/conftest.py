"""Sending fixtures (sink, driver) for the attribution and store tests."""

from tests.sending.conftest import driver, sink  # noqa: F401
