def count(A):
    return {"B": len(A)}
