"""``snet.recursion.deep_recursion``: threads that raise the limit at once leave it as they found it."""

from __future__ import annotations

import sys
import threading

from snet.recursion import DEEP_RECURSION, deep_recursion


def test_overlapping_raises_put_the_original_limit_back():
    """Two threads whose raises overlap, one ending first: the last to end puts the original back."""
    before = sys.getrecursionlimit()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def first():
        with deep_recursion():
            first_in.set()
            second_in.wait(60)
        first_out.set()

    def second():
        first_in.wait(60)
        with deep_recursion():
            second_in.set()
            first_out.wait(60)
            seen.append(sys.getrecursionlimit())  # the first has left: still raised for this one

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert seen == [max(before, DEEP_RECURSION)]
    assert sys.getrecursionlimit() == before


def test_many_threads_at_once_leave_the_limit_as_it_was():
    before = sys.getrecursionlimit()
    start = threading.Barrier(8)

    def work():
        start.wait(60)
        for _ in range(200):
            with deep_recursion():
                assert sys.getrecursionlimit() >= DEEP_RECURSION

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sys.getrecursionlimit() == before
