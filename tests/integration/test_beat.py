"""Beat, run as docker-compose.yml runs it, keeps its schedule in Redis rather than in a file in
its working directory (the image's /app is not writable by its user) and sends the sweep."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from ruamel.yaml import YAML

from tests.conftest import PROJECT_ROOT, sluice_env, wait_until

pytestmark = pytest.mark.integration


def compose_beat_command() -> list[str]:
    with (PROJECT_ROOT / "docker-compose.yml").open(encoding="utf-8") as handle:
        command: list[str] = YAML(typ="safe").load(handle)["services"]["beat"]["command"]
    assert command[0] == "celery"
    return [sys.executable, "-m", *command]


def queued_tasks(client: redis.Redis) -> list[str]:
    return [json.loads(raw)["headers"]["task"] for raw in client.lrange("sluice", 0, -1)]


def test_beat_writes_nothing_in_its_directory_and_sends_the_sweep(
    redis_url: str, tmp_path: Path
) -> None:
    workdir = tmp_path / "app"
    workdir.mkdir()
    workdir.chmod(0o555)  # as /app is to the image's user (root, as in CI, writes anyway)
    env = sluice_env(f"sqlite:///{tmp_path / 'unused.db'}", redis_url,
                     SLUICE_SWEEP_SECONDS="1", PYTHONPATH=str(PROJECT_ROOT),
                     PYTHONWARNINGS="default::DeprecationWarning")
    log = tmp_path / "beat.log"
    with log.open("w") as out:
        beat = subprocess.Popen(compose_beat_command(), env=env, cwd=workdir, stdout=out,
                                stderr=subprocess.STDOUT)
    client = redis.Redis.from_url(redis_url)
    try:
        sent = wait_until(lambda: "sluice.sweep_stale" in queued_tasks(client), timeout=20,
                          interval=0.2)
    finally:
        beat.terminate()
        beat.wait(timeout=30)
        client.close()
    output = log.read_text()
    assert sent, output[-3000:]
    assert list(workdir.iterdir()) == [], output[-3000:]
    # Redis and its options come from the settings, not from redbeat's deprecated fallbacks.
    assert "falling back" not in output, output[-3000:]
