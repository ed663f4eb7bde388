"""The Scrapy project: spiders fetch pages, item pipelines turn them into rows.

Everything here is an adapter around the framework-free `sluice` core.
"""
