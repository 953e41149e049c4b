"""Signup forms: managed through `/api/v1/forms`, filled in on the public page `/f/{id}`."""
