def twice(v):
    return {"v": 2 * v}
