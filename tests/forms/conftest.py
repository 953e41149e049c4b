"""The sending fixtures (sink, driver) and the browser ones for the signup-form tests."""

from tests.browser import browser, live_server, page  # noqa: F401
from tests.sending.conftest import driver, sink  # noqa: F401
