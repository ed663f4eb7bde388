#!/usr/bin/env bash
# Install a Chromium for pages that only render with JavaScript. Playwright cannot download its
# own browser here, so Sluice uses the distribution's package (SLUICE_BROWSER__PATH points to it).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ -n "${SLUICE_BROWSER__PATH:-}" ] && [ -x "${SLUICE_BROWSER__PATH}" ]; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "installing chromium (for JavaScript-only pages)..."
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
else
  echo "warning: no Chromium found; JavaScript-only pages will end as fetch_failed/render_unavailable." >&2
  echo "         install your distribution's chromium package, or set SLUICE_BROWSER__PATH." >&2
fi
