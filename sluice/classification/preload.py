"""Imported by the extraction pool's fork server when the crawler classifies in-process.

The page-type model is loaded once, in the fork server, and every worker forked from it starts
with it already in memory (shared until written): no worker spends its first seconds loading
it, and the arrays are not held once per worker.
"""

from __future__ import annotations

from sluice.classification.model import load_model

load_model()
