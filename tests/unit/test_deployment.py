"""docker-compose.yml is valid against the Compose specification (offline) and has every service
the distributed deployment needs, with health checks where other services wait on them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from sluice.config import FetchSettings
from workers.app import TASK_TIME_LIMIT

PROJECT_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yml"
SERVICES = {"postgres", "redis", "migrate", "crawler", "worker", "beat"}


def check_jsonschema() -> Path:
    return Path(sys.executable).parent / "check-jsonschema"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    with COMPOSE_FILE.open(encoding="utf-8") as handle:
        document: dict[str, Any] = YAML(typ="safe").load(handle)
    return document


def test_compose_file_validates_against_the_compose_spec() -> None:
    result = subprocess.run(
        [str(check_jsonschema()), "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_service_is_defined(compose: dict[str, Any]) -> None:
    assert SERVICES <= set(compose["services"])


@pytest.mark.parametrize("service", ["postgres", "redis"])
def test_data_services_have_health_checks(compose: dict[str, Any], service: str) -> None:
    healthcheck = compose["services"][service].get("healthcheck")
    assert healthcheck and healthcheck.get("test"), f"{service} has no health check"


def test_dependants_wait_for_healthy_data_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("crawler", "worker", "beat"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["redis"]["condition"] == "service_healthy", name


def test_the_validator_rejects_an_invalid_file(tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    broken.write_text("services:\n  web:\n    image: nginx\n    helthcheck: {}\n",
                      encoding="utf-8")
    result = subprocess.run(
        [str(check_jsonschema()), "--builtin-schema", "vendor.compose-spec", str(broken)],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "helthcheck" in result.stdout + result.stderr


def test_every_command_is_one_the_image_has(compose: dict[str, Any]) -> None:
    """Each Sluice service's command, with `--help` added, is accepted as written (a Celery
    subcommand that is not installed, such as `flower`, is not)."""
    for name, service in compose["services"].items():
        command = service.get("command")
        if not command or command[0] not in ("sluice", "celery"):
            continue
        result = subprocess.run([str(Path(sys.executable).parent / command[0]), *command[1:],
                                 "--help"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                                timeout=60, check=False)
        assert result.returncode == 0, f"{name}: {result.stdout + result.stderr}"


def seconds(duration: str) -> float:
    """A Compose duration such as `90s` or `2m30s`, in seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    return sum(float(number) * units[unit]
               for number, unit in re.findall(r"(\d+(?:\.\d+)?)([hms])", duration))


def test_stopped_crawlers_and_workers_have_time_to_finish(compose: dict[str, Any]) -> None:
    """`docker stop` kills after the grace period: a crawler needs more than one download's
    timeout to finish the pages in hand, a worker more than the task time limit."""
    services = compose["services"]
    assert seconds(services["crawler"]["stop_grace_period"]) > FetchSettings().timeout
    assert seconds(services["worker"]["stop_grace_period"]) > TASK_TIME_LIMIT


def docker_pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern as Docker reads it: `**` spans directories, `*` does not."""
    regex = ""
    for token in re.split(r"(\*\*/|\*\*|\*|\?)", pattern.strip("/")):
        regex += {"**/": "(.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(
            token, re.escape(token))
    return re.compile(regex)


def docker_ignores(path: str) -> bool:
    """Whether .dockerignore keeps `path` out of the build context (a directory's rule covers
    what is in it; the last matching rule wins)."""
    lines = (PROJECT_ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    parts = path.split("/")
    ignored = False
    for line in (line.strip() for line in lines):
        if line and not line.startswith("#"):
            pattern = docker_pattern(line.removeprefix("!"))
            if any(pattern.fullmatch("/".join(parts[:n])) for n in range(1, len(parts) + 1)):
                ignored = not line.startswith("!")
    return ignored


@pytest.mark.parametrize("path", [
    ".env", "crawler/.env", ".env.production", ".venv/bin/python", ".git/config", "sluice.db",
    "sluice.db-wal", "sluice.db-shm", "sluice.db-journal", "var/crawl.db",
    "sluice/__pycache__/cli.cpython-311.pyc", ".mypy_cache/3.11/sluice", "tests/conftest.py",
])
def test_the_image_leaves_out_secrets_and_local_state(path: str) -> None:
    assert (PROJECT_ROOT / ".dockerignore").is_file() and docker_ignores(path)


def test_the_image_gets_what_it_installs_and_runs() -> None:
    needed = ["requirements.txt", "pyproject.toml", "alembic.ini", "scrapy.cfg", ".env.example"]
    for package in ("sluice", "crawler", "workers", "migrations"):
        needed += [str(path.relative_to(PROJECT_ROOT))
                   for path in (PROJECT_ROOT / package).rglob("*")
                   if path.is_file() and "__pycache__" not in path.parts]
    assert [path for path in needed if docker_ignores(path)] == []
