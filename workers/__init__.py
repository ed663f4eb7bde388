"""The Celery side: the app (configured from Sluice's settings) and thin tasks."""
