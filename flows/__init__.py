"""Prefect flows and the `udm` CLI; importing this package sets Prefect's privacy and startup defaults
and installs the flow engine patch (flows/engine_patch.py), without importing Prefect."""

import os

from flows import engine_patch

# Before anything imports Prefect: no analytics (which would also try a DNS lookup offline) and a
# temporary server allowed the 10-17 s it needs to start on a small machine. Users can override.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")

# Every flow entry imports this package (Prefect workers too: the entrypoint scripts import it), so
# this one call makes every flow run in the process end as soon as its work does.
engine_patch.install()
