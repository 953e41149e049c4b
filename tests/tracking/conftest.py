"""The sending fixtures (sink, driver, verified domain) for the tracking tests."""

from tests.sending.conftest import driver, sink  # noqa: F401
