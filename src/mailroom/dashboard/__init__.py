"""The dashboard: server-rendered pages for people, on the same services as the API."""
