/* A counting allocator for the tests of allocations per record (tests/runtime/test_allocations.py).

   install() wraps the allocators of the three domains (raw, mem, object) with
   functions that count each new block, then call the allocator they wrap, so
   blocks made before or after go back to the allocator that made them.
   count() is the blocks made so far: malloc and calloc calls, and realloc
   calls that make a block (of NULL); a block grown or shrunk is not a new one.
   Loaded with ctypes.PyDLL (the GIL held), in a process of its own. */

#include <Python.h>

static PyMemAllocatorEx wrapped[3];
static unsigned long long made;

static void *counting_malloc(void *ctx, size_t size)
{
    PyMemAllocatorEx *a = (PyMemAllocatorEx *)ctx;
    __atomic_fetch_add(&made, 1, __ATOMIC_RELAXED);
    return a->malloc(a->ctx, size);
}

static void *counting_calloc(void *ctx, size_t nelem, size_t elsize)
{
    PyMemAllocatorEx *a = (PyMemAllocatorEx *)ctx;
    __atomic_fetch_add(&made, 1, __ATOMIC_RELAXED);
    return a->calloc(a->ctx, nelem, elsize);
}

static void *counting_realloc(void *ctx, void *ptr, size_t size)
{
    PyMemAllocatorEx *a = (PyMemAllocatorEx *)ctx;
    if (ptr == NULL)
        __atomic_fetch_add(&made, 1, __ATOMIC_RELAXED);
    return a->realloc(a->ctx, ptr, size);
}

static void counting_free(void *ctx, void *ptr)
{
    PyMemAllocatorEx *a = (PyMemAllocatorEx *)ctx;
    a->free(a->ctx, ptr);
}

void install(void)
{
    static const PyMemAllocatorDomain domains[3] = {PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ};
    for (int i = 0; i < 3; i++) {
        PyMemAllocatorEx counting = {&wrapped[i], counting_malloc, counting_calloc, counting_realloc, counting_free};
        PyMem_GetAllocator(domains[i], &wrapped[i]);
        PyMem_SetAllocator(domains[i], &counting);
    }
}

unsigned long long count(void)
{
    return __atomic_load_n(&made, __ATOMIC_RELAXED);
}
