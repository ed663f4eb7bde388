"""Discovery: pure parsers that turn feeds, sitemaps and listing pages into article URLs."""
