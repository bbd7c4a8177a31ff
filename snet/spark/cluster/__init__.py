"""Reaching the cluster: :mod:`~.session`, :mod:`~.preflight` (checks before a session starts),
:mod:`~.shipping` (what executors get), :mod:`~.jobs` (job tags; ``snet spark-submit``: :mod:`snet.commands.submit`)."""
