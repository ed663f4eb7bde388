"""Per-site memory: the learned render mode (and the user's render policy) of each host."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from sluice.db.models import sites
from sluice.db.store import as_utc, upsert, utcnow
from sluice.render_policy import mode_for_share, update_js_share


@dataclass(frozen=True, slots=True)
class SiteRenderState:
    render_mode: str | None
    render_policy: str | None
    learned_at: datetime | None


def load_render_states(conn: sa.Connection) -> dict[str, SiteRenderState]:
    query = sa.select(sites.c.host, sites.c.render_mode, sites.c.render_policy,
                      sites.c.render_learned_at)
    return {host: SiteRenderState(mode, policy, as_utc(learned_at))
            for host, mode, policy, learned_at in conn.execute(query)}


def record_render_outcomes(conn: sa.Connection, outcomes: Sequence[tuple[str, bool]]
                           ) -> dict[str, SiteRenderState]:
    """Fold pages that passed the gate, as (host, needed the browser), into each site's
    learned render mode. Returns the new state of every host touched."""
    if not outcomes:
        return {}
    hosts = sorted({host for host, _ in outcomes})
    shares: dict[str, float | None] = dict(conn.execute(
        sa.select(sites.c.host, sites.c.js_share).where(sites.c.host.in_(hosts))).all())
    for host, needed_browser in outcomes:
        shares[host] = update_js_share(shares.get(host), needed_browser)
    now = utcnow()
    modes = {host: mode_for_share(share or 0.0) for host, share in shares.items()}
    upsert(conn, sites, [{"host": host, "js_share": shares[host], "render_mode": mode,
                          "render_learned_at": now, "updated_at": now}
                         for host, mode in modes.items()])
    policies: dict[str, str | None] = dict(conn.execute(
        sa.select(sites.c.host, sites.c.render_policy).where(sites.c.host.in_(hosts))).all())
    return {host: SiteRenderState(mode, policies.get(host), now) for host, mode in modes.items()}


def set_render_policy(conn: sa.Connection, host: str, policy: str | None) -> None:
    upsert(conn, sites, [{"host": host, "render_policy": policy, "updated_at": utcnow()}])
