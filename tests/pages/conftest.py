"""The sending fixtures (sink, driver) for the subscriber page tests."""

from tests.browser import browser, live_server, page  # noqa: F401
from tests.sending.conftest import driver, sink  # noqa: F401
