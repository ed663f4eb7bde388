"""Sluice's spiders."""
