"""``box_timeout`` and ``box_retries`` in the API: runs, sessions, async and generator boxes, option checks."""

from __future__ import annotations

import asyncio
import threading

import pytest

import snet
from snet.errors import SNetBoxError, SNetUsageError

NET = "box f ((x) -> (y)); box g ((y) -> (z)); net n connect f .. g;"
NEVER = threading.Event()  # never set: a call that waits on it hangs for ever


def g(y):
    return {"z": y * 10}


def hangs_at(n):
    def f(x):
        if x == n:
            NEVER.wait()
        return {"y": x}
    return f


class Flaky:
    """Fails the first ``failures`` calls of each record whose x is odd; counts the calls per record."""

    def __init__(self, failures):
        self.failures = failures
        self.calls: dict[int, int] = {}
        self.lock = threading.Lock()

    def __call__(self, x):
        with self.lock:
            self.calls[x] = tries = self.calls.get(x, 0) + 1
        if x % 2 and tries <= self.failures:
            raise OSError(f"try {tries} of {x}")
        return {"y": x}


def test_a_hanging_call_times_out_and_is_skipped(engine_options):
    net = snet.load(NET, boxes={"f": hangs_at(7), "g": g})
    execution = net.run([{"x": i} for i in range(20)], box_timeout={"f": 2}, on_error="skip", **engine_options)
    assert [o["z"] for o in execution] == [i * 10 for i in range(20) if i != 7]
    stats = execution.stats()
    assert (stats.boxes["f"].retries, stats.boxes["f"].timeouts) == (0, 1)
    assert stats.boxes["g"].timeouts is None  # g has neither: not counted
    assert "timeouts" not in stats.to_json()["boxes"]["g"] and stats.to_json()["boxes"]["f"]["timeouts"] == 1


def test_retries_give_exact_output(engine_options):
    flaky = Flaky(2)
    net = snet.load(NET, boxes={"f": flaky, "g": g})
    execution = net.run([{"x": i} for i in range(30)], box_retries=(3, 0.0), **engine_options)
    assert sorted(o["z"] for o in execution) == [i * 10 for i in range(30)]
    assert all(flaky.calls[i] == (3 if i % 2 else 1) for i in range(30))
    assert execution.stats().boxes["f"].retries == 2 * 15


def test_spent_retries_raise_the_last_error_under_stop(engine_options):
    net = snet.load(NET, boxes={"f": Flaky(9), "g": g})
    with pytest.raises(SNetBoxError, match=r"box 'f' raised OSError: try 3 of 1 \(the last of 3 attempts\)"):
        list(net.run([{"x": 0}, {"x": 1}], box_retries={"f": (2, 0.0)}, **engine_options))


def test_a_wrong_result_is_not_retried(engine_options):
    calls = []

    def f(x):
        calls.append(x)
        return {"w": x}

    net = snet.load(NET, boxes={"f": f, "g": g})
    with pytest.raises(SNetBoxError, match="fits none of its output variants"):
        list(net.run([{"x": 1}], box_retries=5, **engine_options))
    assert calls == [1]


def test_a_generator_box_is_retried_and_timed_as_a_whole(engine_options):
    tries = []

    def f(x):
        tries.append(x)
        yield {"y": x}
        if len(tries) < 3:
            raise ValueError("half way")
        yield {"y": x + 1}

    net = snet.load(NET, boxes={"f": f, "g": g})
    outputs = list(net.run([{"x": 1}], box_retries=(2, 0.0), box_timeout=30, **engine_options))
    assert [o["z"] for o in outputs] == [10, 20]  # the outputs of the successful attempt only
    assert len(tries) == 3


@pytest.mark.slow
def test_an_async_box_is_cancelled_at_its_timeout(engine_options):
    cancelled = []

    async def f(x):
        if x == 2:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append(x)
                raise
        return {"y": x}

    net = snet.load(NET, boxes={"f": f, "g": g})
    errors = []
    execution = net.run([{"x": i} for i in range(5)], box_timeout=2, on_error=errors.append, **engine_options)
    assert sorted(o["z"] for o in execution) == [0, 10, 30, 40]
    assert [e["record"] for e in errors] == [{"x": 2}] and errors[0]["exception"] == "BoxTimeout"
    assert "box 'f' timed out after 2 s" in errors[0]["error"]
    assert cancelled == [2]


@pytest.mark.slow
def test_a_session_fails_the_future_of_a_call_that_timed_out():
    net = snet.load(NET, boxes={"f": hangs_at(3), "g": g})
    with net.session(box_timeout=2, on_error="skip") as session:
        futures = [session.submit({"x": i}) for i in range(5)]
        assert futures[0].result(timeout=60) == [{"z": 0}]
        with pytest.raises(SNetBoxError, match="timed out after 2 s"):
            futures[3].result(timeout=60)
        assert futures[4].result(timeout=60) == [{"z": 40}]
        session.close(timeout=60)


@pytest.mark.parametrize("options, message", [
    ({"box_timeout": -1}, "box_timeout must be a number of seconds > 0, not -1"),
    ({"box_timeout": {"f": "5"}}, "box_timeout for box 'f' must be a number of seconds > 0, not '5'"),
    ({"box_retries": (1, -2)}, "box_retries needs N >= 0 and BACKOFF >= 0 seconds, not (1, -2.0)"),
    ({"box_retries": {"f": 1.5}}, "box_retries for box 'f' takes N or (N, BACKOFF), not 1.5"),
    ({"box_retries": {"h": 1}}, "box retries given for 'h', which the network does not use"),
    ({"box_timeout": {"f": 1}, "box_timeout_per_box": {"g": 1}}, "either as box_timeout or as box_timeout_per_box"),
])
def test_bad_values_are_refused_before_the_run(options, message):
    net = snet.load(NET, boxes={"f": hangs_at(-1), "g": g})
    with pytest.raises(SNetUsageError) as caught:
        net.run([{"x": 1}], **options)
    assert message in str(caught.value)


def test_no_stand_in_without_timeout_or_retries():
    f = hangs_at(-1)
    net = snet.load(NET, boxes={"f": f, "g": g})
    execution = net.run([{"x": 1}], box_retries={"g": 1})
    assert list(execution) == [{"z": 10}]
    assert execution.stats().boxes["f"].retries is None and execution.stats().boxes["g"].retries == 0


META = """net n {{
  <metadata><box name="f">{f}</box></metadata>
  box f ((x) -> (y));
  box g ((y) -> (z));
}} connect f .. g;"""


def test_metadata_gives_a_box_its_timeout_and_retries(engine_options):
    flaky = Flaky(1)
    net = snet.load(META.format(f="<timeout>30</timeout><retries>1,0</retries>"), boxes={"f": flaky, "g": g})
    execution = net.run([{"x": i} for i in range(6)], **engine_options)
    assert sorted(o["z"] for o in execution) == [i * 10 for i in range(6)]
    assert (execution.stats().boxes["f"].retries, execution.stats().boxes["g"].retries) == (3, None)


def test_a_setting_by_name_overrides_the_metadata_which_overrides_the_default():
    net = snet.load(META.format(f="<retries>0</retries>"), boxes={"f": Flaky(1), "g": g})
    with pytest.raises(SNetBoxError, match="try 1 of 1"):  # the metadata's 0 wins over the default 2
        list(net.run([{"x": 1}], box_retries=2))
    assert list(net.run([{"x": 1}], box_retries={"f": (1, 0.0)})) == [{"z": 10}]
    net = snet.load(META.format(f="<timeout>0.5</timeout>"), boxes={"f": hangs_at(1), "g": g})
    errors = []
    assert list(net.run([{"x": 1}], box_timeout=3600, on_error=errors.append)) == []
    assert "timed out after 0.5 s" in errors[0]["error"]


@pytest.mark.parametrize("setting, message", [
    ("<timeout>soon</timeout>", "<string>:5:11: error: metadata of box 'f': <timeout> takes a number of seconds > 0, "
                                "not 'soon'"),
    ("<timeout>-1</timeout>", "<timeout> takes a number of seconds > 0, not '-1'"),
    ("<retries>2,x</retries>", "<retries> takes N or N,BACKOFF (N >= 0, BACKOFF >= 0 seconds), not '2,x'"),
])
def test_bad_metadata_is_refused_with_its_position(setting, message):
    net = snet.load(META.format(f=setting), boxes={"f": Flaky(0), "g": g})
    with pytest.raises(SNetUsageError) as caught:
        net.run([{"x": 1}])
    assert message in str(caught.value)


def test_one_box_with_two_metadata_settings_is_refused():
    source = """box f ((x) -> (x));
net a { <metadata><box name="f"><timeout>1</timeout></box></metadata> } connect f;
net b { <metadata><box name="f"><timeout>2</timeout></box></metadata> } connect f;
net n connect a .. b;"""
    net = snet.load(source, boxes={"f": lambda x: {"x": x}}, net="n")
    with pytest.raises(SNetUsageError, match=r"<string>:3:81: error: box 'f' has other <timeout> or <retries> "
                                             r"metadata here than at <string>:2:81"):
        net.run([{"x": 1}])


def test_a_callable_with_an_async_call_method_is_retried_too(engine_options):
    class Box:
        def __init__(self):
            self.tries = 0

        async def __call__(self, x):
            self.tries += 1
            if self.tries < 3:
                raise OSError("not yet")
            return {"y": x}

    box = Box()
    net = snet.load(NET, boxes={"f": box, "g": g})
    assert list(net.run([{"x": 4}], box_retries=(2, 0.0), **engine_options)) == [{"z": 40}]
    assert box.tries == 3
