"""Campaigns: the resource (on `named.Named`), its audience, actions and report."""
