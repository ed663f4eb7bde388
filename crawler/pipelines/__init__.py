"""Item pipelines: extract (in a process pool, gate included) then store (batched upserts)."""
