# One image for every Sluice process (crawler, worker, beat, migrations); the command differs.
FROM python:3.11-slim-bookworm

# Chromium renders pages that only work with JavaScript (Playwright drives it; its own browser
# download is not used). libpq is not needed: psycopg ships a binary build.
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium \
 && rm -rf /var/lib/apt/lists/*

ENV PYTHONUNBUFFERED=1 \
    SLUICE_BROWSER__PATH=/usr/bin/chromium

WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN pip install --no-cache-dir --no-deps -e .

RUN useradd --create-home sluice
USER sluice

CMD ["sluice", "--help"]
