"""People who sign in to the dashboard: passwords, one-time sign-in links, sessions."""
