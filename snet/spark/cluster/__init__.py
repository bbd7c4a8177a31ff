"""Reaching the cluster: :mod:`~.session` (master URLs, session reuse), :mod:`~.preflight` (checks before a
session starts), :mod:`~.shipping` (the program, boxes and package on the executors), :mod:`~.jobs` (job tags,
Ctrl-C); ``snet spark-submit`` is :mod:`snet.commands.submit`."""
