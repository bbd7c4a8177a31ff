# Compiled walks run in C: the walk of the records of one shape through a chain of boxes, or a box alone
# (snet.core.chains.walk_program), with the record's values in an array between the boxes.
# Used by ChainEntity.walk (chains.pxi) and BoxEntity.walked (entities.pxi).

from libc.string cimport memset
from cpython.dict cimport PyDict_Copy, PyDict_New, PyDict_Next, PyDict_SetItem
from cpython.long cimport PyLong_CheckExact
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

from snet.core.boxes import end_forked_child
from snet.core.chains import handed_back, walk_program


cdef extern from "Python.h":
    PyObject *PyObject_Vectorcall(PyObject *callable, PyObject **args, size_t nargsf, PyObject *kwnames)
    PyObject *PyDict_GetItemWithError(PyObject *d, PyObject *key)  # borrowed; NULL: absent, or an error set
    bint exact_dict "PyDict_CheckExact"(PyObject *o)
    Py_ssize_t dict_size "PyDict_GET_SIZE"(PyObject *d)
    void PyErr_Fetch(PyObject **kind, PyObject **value, PyObject **tb)
    void PyErr_NormalizeException(PyObject **kind, PyObject **value, PyObject **tb)
    int PyException_SetTraceback(PyObject *ex, PyObject *tb)
    void PyErr_Clear()
    void ref_up "Py_INCREF"(PyObject *o)
    void ref_down "Py_DECREF"(PyObject *o)
    void ref_drop "Py_XDECREF"(PyObject *o)

cdef extern from "pthread.h" nogil:
    int pthread_atfork(void (*prepare)() noexcept nogil, void (*parent)() noexcept nogil,
                       void (*child)() noexcept nogil)


cdef enum:
    WALK_SLOTS = 128  # values a compiled walk holds at most (a program with more goes through the callers)


# Forks this process has made, as the child counts them: a walk that finds the count changed across its box
# calls is a child that a box forked, come back into the run (snet.core.boxes.end_forked_child).
cdef long forks = 0

cdef void count_fork() noexcept nogil:
    global forks
    forks += 1

pthread_atfork(NULL, NULL, count_fork)


cdef object raised_now():
    """The exception being raised (taken: none is raised after), its traceback on it."""
    cdef PyObject *kind = NULL
    cdef PyObject *value = NULL
    cdef PyObject *tb = NULL
    PyErr_Fetch(&kind, &value, &tb)
    PyErr_NormalizeException(&kind, &value, &tb)
    if tb != NULL:
        PyException_SetTraceback(value, tb)
    ref_drop(kind)
    ref_drop(tb)
    error = <object>value  # (a new reference: the fetched one goes)
    ref_down(value)
    return error


@cython.final
cdef class CWalk:
    """A ``WalkProgram`` run in C: one function call per box, no Python frame of its own.

    Its result is what the program's Python source gives
    (``snet.core.chains.compile_walk``): the chain's output record, or
    ``(stage, the stage's input record, what the box returned or raised,
    raised?)`` for what it does not take for granted.  The checks of each
    box's result are made here, in C: a dict of exactly the declared
    labels, a tag's value an ``int``.
    """
    cdef Py_ssize_t slots
    cdef Py_ssize_t n  # stages
    cdef tuple functions
    cdef tuple head  # labels read from the input record
    cdef tuple outputs  # every stage's output labels, one after another
    cdef tuple final  # the output record's labels
    cdef tuple givens  # per stage: its input record's (label, slot) pairs, None: the chain's input record
    cdef str boxes
    cdef bint as_result  # the output record is a copy of the last box's result (WalkProgram.as_result)
    cdef int *ints  # one block, which the following point into
    cdef int *head_at  # per head label: its slot
    cdef int *nargs  # per stage: its arguments (0 to 2)
    cdef int *args  # per stage: two argument slots
    cdef int *out_from  # per stage: where its labels start in ``outputs``; one more: the end
    cdef int *out_at  # per output label: its slot
    cdef int *tag_from  # per stage: where its tags start in ``tag_at``; one more: the end
    cdef int *tag_at  # per tag: its slot
    cdef int *final_at  # per output record label: its slot

    def __dealloc__(self):
        PyMem_Free(self.ints)

    cdef int setup(self, program) except -1:
        cdef Py_ssize_t n = len(program.stages)
        cdef Py_ssize_t nout = sum(len(stage.outputs) for stage in program.stages)
        cdef Py_ssize_t ntag = sum(len(stage.tags) for stage in program.stages)
        cdef Py_ssize_t size = len(program.head) + 3 * n + 2 * (n + 1) + nout + ntag + len(program.output)
        cdef Py_ssize_t k, j
        self.slots = program.slots
        self.n = n
        self.functions = tuple(stage.function for stage in program.stages)
        self.head = tuple(label for label, _ in program.head)
        self.outputs = tuple(label for stage in program.stages for label, _ in stage.outputs)
        self.final = tuple(label for label, _ in program.output)
        self.givens = tuple(stage.given for stage in program.stages)
        self.as_result = program.as_result
        boxes = program.boxes
        self.boxes = boxes[1:len(boxes) - 1]
        self.ints = <int *>PyMem_Malloc(size * sizeof(int))
        if self.ints == NULL:
            raise MemoryError()
        self.head_at = self.ints
        self.nargs = self.head_at + len(program.head)
        self.args = self.nargs + n
        self.out_from = self.args + 2 * n
        self.tag_from = self.out_from + n + 1
        self.out_at = self.tag_from + n + 1
        self.tag_at = self.out_at + nout
        self.final_at = self.tag_at + ntag
        for j, (_, slot) in enumerate(program.head):
            self.head_at[j] = slot
        cdef int o = 0, t = 0
        for k, stage in enumerate(program.stages):
            self.nargs[k] = len(stage.arguments)
            self.args[2 * k] = stage.arguments[0] if len(stage.arguments) > 0 else 0
            self.args[2 * k + 1] = stage.arguments[1] if len(stage.arguments) > 1 else 0
            self.out_from[k] = o
            self.tag_from[k] = t
            for _, slot in stage.outputs:
                self.out_at[o] = slot
                o += 1
            for slot in stage.tags:
                self.tag_at[t] = slot
                t += 1
        self.out_from[n] = o
        self.tag_from[n] = t
        for j, (_, slot) in enumerate(program.output):
            self.final_at[j] = slot
        return 0

    cdef object given(self, Py_ssize_t k, dict rec, PyObject **v):
        """Stage ``k``'s input record, as the box callers would have made it."""
        fields = self.givens[k]
        if fields is None:
            return rec
        return {label: <object>v[<int>slot] for label, slot in fields}

    def __call__(self, dict rec):
        return self.run(rec)

    def many(self, tuple shape, list records, Py_ssize_t start, Py_ssize_t end, list outputs):
        """``snet.core.chains.walk_many`` of this walk, its loop in C: records ``start`` to ``end`` walked
        while each is a dict of labels ``shape`` whose walk gives the output record, ``[that record]``
        appended to ``outputs`` for each; ``(where it stopped, what the walk handed back there or None)``."""
        cdef Py_ssize_t i
        cdef object rec, out
        for i in range(start, end):
            rec = records[i]
            if type(rec) is not dict or not same_labels(<dict>rec, shape):
                return i, None
            out = self.run(<dict>rec)
            if type(out) is not dict:
                return i, out
            outputs.append([out])
        return end, None

    cdef object run(self, dict rec):
        """``rec`` (of the program's shape) through the boxes: the output record, or what is handed back."""
        cdef PyObject *v[WALK_SLOTS]
        cdef PyObject *a[2]
        cdef PyObject *r = NULL
        cdef PyObject *x
        cdef Py_ssize_t k, j
        cdef long forks_before = forks
        cdef object result
        memset(v, 0, self.slots * sizeof(PyObject *))
        try:
            for j in range(len(self.head)):
                x = PyDict_GetItemWithError(<PyObject *>rec, PyTuple_GET_ITEM(self.head, j))
                if x == NULL:  # (the shape was checked: only an error in a label's comparison)
                    raise KeyError(self.head[j])
                ref_up(x)
                v[self.head_at[j]] = x
            for k in range(self.n):
                a[0] = v[self.args[2 * k]]
                a[1] = v[self.args[2 * k + 1]]
                r = PyObject_Vectorcall(PyTuple_GET_ITEM(self.functions, k), a, self.nargs[k], NULL)
                if r == NULL:
                    error = raised_now()  # (first: nothing may run with the exception still set)
                    return (k, self.given(k, rec, v), error, True)
                if not exact_dict(r) or dict_size(r) != self.out_from[k + 1] - self.out_from[k]:
                    return (k, self.given(k, rec, v), <object>r, False)
                for j in range(self.out_from[k], self.out_from[k + 1]):
                    x = PyDict_GetItemWithError(r, PyTuple_GET_ITEM(self.outputs, j))
                    if x == NULL:  # (the callers look again, and raise what a lookup raises)
                        PyErr_Clear()
                        return (k, self.given(k, rec, v), <object>r, False)
                    ref_up(x)
                    v[self.out_at[j]] = x
                for j in range(self.tag_from[k], self.tag_from[k + 1]):
                    if not PyLong_CheckExact(<object>v[self.tag_at[j]]):
                        return (k, self.given(k, rec, v), <object>r, False)
                if k < self.n - 1 or not self.as_result:
                    ref_down(r)
                    r = NULL
            if self.as_result:
                result = PyDict_Copy(<object>r)
            else:
                result = PyDict_New()
                for j in range(len(self.final)):
                    PyDict_SetItem(result, <object>PyTuple_GET_ITEM(self.final, j), <object>v[self.final_at[j]])
        finally:
            ref_drop(r)
            for j in range(self.slots):
                ref_drop(v[j])
        if forks != forks_before:
            end_forked_child(self.boxes)
        return result


cdef tuple node_walk(Network rt, int node, tuple ops, dict rec):
    """``(shape, its CWalk or None)`` of node ``node`` (a box, or a fused chain's last stage) through the box
    callers ``ops``: made for the first record shape the node sees, ``rec``'s, and shared by every entity of the
    node (the replicas of a split build none of their own); records of other shapes go through the callers."""
    compiled = rt.walks.get(node)
    if compiled is None:  # (setdefault: of two made at once, every entity keeps the same)
        compiled = rt.walks.setdefault(node, (tuple(rec), make_walk(ops, tuple(rec))))
    return <tuple>compiled


cpdef CWalk make_walk(tuple ops, tuple shape):
    """The compiled walk of records with labels ``shape`` through the box callers ``ops``, or None."""
    cdef CWalk walk
    program = walk_program(ops, shape)
    if program is None or program.slots > WALK_SLOTS:
        return None
    walk = CWalk.__new__(CWalk)
    walk.setup(program)
    return walk


cdef bint same_labels(dict rec, tuple labels) except -1:
    """``rec`` has exactly ``labels``, in this order (walked in place: no iterator, no tuple built)."""
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t i = 0
    cdef PyObject *key
    cdef PyObject *value
    if len(rec) != PyTuple_GET_SIZE(labels):
        return False
    while PyDict_Next(rec, &pos, &key, &value):
        if key != PyTuple_GET_ITEM(labels, i) and <object>key != <object>PyTuple_GET_ITEM(labels, i):
            return False
        i += 1
    return True
