"""The bundled demo: a small local news site (written for this project) and a crawl of it."""
