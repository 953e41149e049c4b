"""RSS-to-email: feeds fetched through the URL guard (fetch), parsed and sanitised (parse)."""
