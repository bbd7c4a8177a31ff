"""Build of snet: the pure-Python package and its compiled parts.

Cython, which pyproject.toml lists as a build requirement, compiles the
extensions of ``snet_front`` from their ``.pyx`` sources and the box caller
``snet/core/boxes.py`` (the hottest path of every engine: plain Python source
with an augmenting ``.pxd``), so ``pip install -e .`` on a fresh machine
builds them.  ``SNET_FRONT_DEBUG=1`` in the environment compiles them with
the debug counters and line tracing.
"""

import glob
import os
import sys

from setuptools import Extension, find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))


# Pure-Python modules of the package that are also compiled (an augmenting .pxd
# beside each declares its extension types); uncompiled they still run as Python.
COMPILED_PY = [os.path.join("snet", "core", "boxes.py")]


def front_extensions():
    sources = sorted(glob.glob(os.path.join("snet_front", "*.pyx"))) + COMPILED_PY
    if not sources:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:  # pragma: no cover - pyproject.toml makes Cython available
        sys.exit("building snet needs Cython>=3.1 (pip install 'Cython>=3.1,<3.4')")
    debug = os.environ.get("SNET_FRONT_DEBUG", "") not in ("", "0")
    macros = [("SNET_FRONT_DEBUG", "1" if debug else "0")]
    if debug:
        macros.append(("CYTHON_TRACE_NOGIL", "1"))
    extensions = [
        Extension(
            os.path.splitext(src)[0].replace(os.sep, "."),
            [src],
            include_dirs=[os.path.join("snet_front", "includes")],
            define_macros=macros,
            extra_compile_args=["-O2"],
        )
        for src in sources
    ]
    # annotation_typing off: the annotations of the pure-Python modules are documentation,
    # their C types come from the .pxd files.
    directives = {"language_level": 3, "boundscheck": False, "wraparound": False,
                  "annotation_typing": False}
    if debug:
        directives["linetrace"] = True
    # The modules need no GIL (docs/runtime.md, "The GIL"): on a free-threaded
    # CPython importing them keeps it off (Cython 3.1+ knows the directive).
    directives["freethreading_compatible"] = True
    return cythonize(extensions, compiler_directives=directives,
                     annotate=os.environ.get("SNET_FRONT_ANNOTATE") == "1")


def read_version():
    scope = {}
    with open(os.path.join(HERE, "snet", "_version.py")) as f:
        exec(f.read(), scope)
    return scope["__version__"]


setup(
    name="snet",
    version=read_version(),
    description="S-Net, the declarative coordination language, with the FRONT work-stealing runtime",
    long_description=open(os.path.join(HERE, "README.md")).read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_packages(include=["snet", "snet.*", "snet_front", "boxes"]),
    package_data={"snet.syntax": ["*.lark"], "snet.core": ["*.pxd"], "snet_front": ["*.pxd", "*.pyi", "py.typed", "includes/*"],
                  "boxes": ["*.snet", "*.jsonl", "*.xml"]},
    ext_modules=front_extensions(),
    install_requires=["lark>=1.2,<2", "attrs>=23"],
    extras_require={
        "examples": ["numpy>=1.24"],
        # pyspark[connect] brings the Spark Connect client (grpcio, zstandard, ...) for sc:// masters.
        # cloudpickle: the fallback of snet.spark.replicas where pyspark's own copy is missing.
        "spark": ["pyspark[connect]>=4.0,<5", "pandas>=2.2,<3", "pyarrow>=18", "cloudpickle>=2.0"],
        "test": ["pytest>=8", "pytest-benchmark>=4", "hypothesis>=6", "interegular>=0.3",
                 "numpy>=1.24", "pyspark[connect]>=4.0,<5", "pandas>=2.2,<3", "pyarrow>=18"],
    },
    entry_points={"console_scripts": ["snet = snet.__main__:main"]},
    zip_safe=False,
)
