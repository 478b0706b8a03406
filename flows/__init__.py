"""Prefect flows and the `udm` CLI; importing this package sets Prefect's privacy and startup defaults."""

import os

# Before anything imports Prefect: no analytics (which would also try a DNS lookup offline) and a
# temporary server allowed the 10-17 s it needs to start on a small machine. Users can override.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
