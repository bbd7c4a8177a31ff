"""The boxes of wordstats.snet (docs/tutorial.md): those of the earlier steps."""

from headline import shorten  # noqa: F401
from stats import distinct, longest, words  # noqa: F401
