"""Boxes of sieve_feedback.snet."""


def sift(state, inval):
    for p in state:
        if p * p > inval:
            break
        if inval % p == 0:
            return {"state": state}
    return [{"outval": inval}, {"state": state + (inval,)}]
