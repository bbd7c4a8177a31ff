"""How many examples a property test runs: all of them, or a sixth in the quick loop.

``python3 -m pytest -m "not slow"`` is the quick loop of work in progress
(CONTRIBUTING.md); ``tests/conftest.py`` sets :data:`QUICK` for it before the
test modules are imported.  A full run (CI's) runs every example a test asks for.
"""

from __future__ import annotations

QUICK = False


def examples(count: int) -> int:
    """``count`` generated examples, or a sixth of them (at least 10) in the quick loop."""
    return max(10, count // 6) if QUICK else count
