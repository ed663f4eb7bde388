"""Downloader middlewares, one component per module."""
