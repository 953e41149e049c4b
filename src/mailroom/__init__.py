"""Mailroom: self-hostable email-marketing service."""

__version__ = "0.1.0"
# The interface version of the HTTP API (the spec's Versioning section).
API_VERSION = "1.27.0"
