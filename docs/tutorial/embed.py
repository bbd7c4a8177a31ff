"""Running wordstats.snet from Python (docs/tutorial.md, step 5)."""

from pathlib import Path

import snet
import wordstats

HERE = Path(__file__).parent
net = snet.load(HERE / "wordstats.snet", boxes=wordstats)
print(net.signature)

# One run over a list of records: the outputs stream back as they are made.
texts = ["Small boxes, big networks.", "Records flow; boxes compute."]
records = [{"text": t, "<doc>": i} for i, t in enumerate(texts, 1)]
for out in net.run(records, workers=2):
    print(out["<doc>"], out["longest"], out["<distinct>"])

# A session keeps one run up: feed records whenever they come, take outputs.
with net.session(workers=2) as session:
    session.feed({"text": "A session stays up between records.", "<doc>": 10})
    print(session.get(timeout=10)["headline"])
    session.feed({"text": "Closing it ends the input and waits.", "<doc>": 11})
    for out in session.close():  # the outputs not taken yet
        print(out["headline"])
