"""The collector is paused while the front end builds a program (snet/gcpause.py), and put back."""

from __future__ import annotations

import gc
import threading

import pytest

from snet.errors import SNetCompileError, SNetSyntaxError
from snet.gcpause import gc_paused
from snet.spg.build import compile_source

PROGRAM = "net t connect [{<a>} -> {<b=a+1>}] .. [{<b>} -> {<c=b*2>}];"


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_inside_and_back_on_after(collector_on):
    seen = []
    with gc_paused():
        seen.append(gc.isenabled())
        with gc_paused():  # reentrant: the inner end does not resume it
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
    assert seen == [False, False, False]
    assert gc.isenabled()


def test_back_on_after_a_compile_error(collector_on):
    with pytest.raises(SNetCompileError):
        compile_source("net t connect nosuchbox;")
    assert gc.isenabled()
    with pytest.raises(SNetSyntaxError):
        compile_source("net t connect [{<a>} -> ;")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_program_stays_off(collector_on):
    gc.disable()
    compile_source(PROGRAM)
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_resumed_only_when_the_last_thread_is_done(collector_on):
    inside = threading.Barrier(2)
    first_done = threading.Event()
    states = {}

    def long_compile():
        with gc_paused():
            inside.wait()
            first_done.wait(10)
            states["second still inside"] = gc.isenabled()

    t = threading.Thread(target=long_compile)
    t.start()
    with gc_paused():
        inside.wait()
    states["after the first ended"] = gc.isenabled()
    first_done.set()
    t.join(10)
    assert states == {"after the first ended": False, "second still inside": False}
    assert gc.isenabled()



def test_the_checking_functions_pause_it_when_called_directly(collector_on, monkeypatch):
    """resolve and find_warnings, the check stage's entries for embedders, keep the collector paused
    while they run (seen from a step each of them calls) and put it back on after."""
    from snet.syntax.parser import parse
    from snet.typesys import scopes, warnings
    from snet.typesys.types import TypeChecker

    seen = []
    cycles, slips = scopes._check_cycles, warnings.find_slips
    monkeypatch.setattr(scopes, "_check_cycles", lambda res: (seen.append(gc.isenabled()), cycles(res))[1])
    monkeypatch.setattr(warnings, "find_slips", lambda res, ch: (seen.append(gc.isenabled()), slips(res, ch))[1])
    res = scopes.resolve(parse(PROGRAM, "t.snet"))
    assert gc.isenabled()
    assert warnings.find_warnings(res, TypeChecker(res)) == []
    assert seen == [False, False]
    assert gc.isenabled()
