"""The Celery app. Its configuration derives from Sluice's settings.

Without `SLUICE_REDIS_URL` tasks run eagerly, in the calling process (the embedded default).
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from sluice.config import Settings, get_settings

# Classification takes well under a second a page; a task still running after this long is
# stuck. The broker's visibility timeout (a setting) sits above it, so a slow task is not
# delivered twice.
TASK_TIME_LIMIT = 120


def celery_config(settings: Settings) -> dict[str, Any]:
    broker = settings.redis_url or "memory://"
    # A worker killed mid-task: its task comes back after the visibility timeout. Kombu checks
    # for such tasks every `unacked_restore_interval`; short here, so recovery takes seconds.
    transport = {"visibility_timeout": settings.visibility_timeout,
                 "unacked_restore_interval": 5, "unacked_restore_throttle": 0.5}
    return {
        "broker_url": broker,
        "result_backend": None,
        "task_ignore_result": True,
        "task_always_eager": settings.embedded,
        "task_eager_propagates": True,
        # A task is acknowledged only once it has finished; a worker killed mid-task leaves it
        # in the queue, and a pool child killed mid-task has it requeued at once.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_time_limit": TASK_TIME_LIMIT,
        "task_soft_time_limit": TASK_TIME_LIMIT - 10,
        "broker_transport_options": transport,
        "broker_connection_retry_on_startup": True,
        "task_default_queue": "sluice",
        "worker_hijack_root_logger": False,
        # Beat runs redbeat's scheduler (`-S redbeat.RedBeatScheduler`): its schedule lives in
        # Redis, not in a file in the working directory, and its lock keeps one beat at a time.
        "redbeat_redis_url": settings.redis_url,
        "redbeat_redis_options": {},  # the broker's transport options are not for this client
        # Beat wakes at least this often; a beat killed without releasing its lock holds it
        # for five times this (redbeat's default), so a restarted beat waits minutes, not 25.
        "beat_max_loop_interval": 30,
        "beat_schedule": {
            "sweep-stale": {"task": "sluice.sweep_stale",
                            "schedule": float(settings.sweep_seconds)},
            "enqueue-due-feeds": {"task": "sluice.enqueue_due_feeds",
                                  "schedule": float(settings.discovery.schedule_seconds)},
        },
    }


def create_app(settings: Settings | None = None) -> Celery:
    app = Celery("sluice", include=["workers.tasks"])
    app.conf.update(celery_config(settings or get_settings()))
    return app


app = create_app()
