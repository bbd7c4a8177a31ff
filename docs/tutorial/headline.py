"""The box of headline.snet (docs/tutorial.md, step 3).

The parameters are named after the box's input labels (the tag <limit> is
the parameter ``limit``), so the values are passed by name.
"""


def shorten(headline, limit):
    """One step towards a headline of at most ``limit`` characters."""
    if len(headline) <= limit:
        return {"headline": headline, "<fits>": 1}
    shorter, _, _ = headline.rpartition(" ")
    return {"headline": shorter or headline[:limit], "<limit>": limit}
