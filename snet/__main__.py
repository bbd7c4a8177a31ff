"""``python -m snet``: the same as the ``snet`` command."""

from snet.cli import main

raise SystemExit(main())
