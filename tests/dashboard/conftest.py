"""The browser fixtures for the dashboard tests that run in a real browser."""

from tests.browser import browser, live_server, page  # noqa: F401
