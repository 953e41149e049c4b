"""The sending fixtures (sink, driver) for the automation tests."""

from tests.sending.conftest import driver, sink  # noqa: F401
