"""Build of snet: the pure-Python package and its compiled parts.

Cython, which pyproject.toml lists as a build requirement, compiles the
extensions of ``snet_front`` from their ``.pyx`` sources, the box caller
``snet/core/boxes.py`` and the synchro-cells ``snet/core/cells.py`` (the
hottest paths of every engine: plain Python source with an augmenting
``.pxd``), so ``pip install -e .`` on a fresh machine builds them, and
``pip wheel .`` gives a wheel with them inside.  ``SNET_FRONT_DEBUG=1`` in
the environment compiles them with line tracing and the FRONT runtime's
debug counters (``snet_front/includes/debug.h``), which the test suite then
checks after every test (CONTRIBUTING.md, "The debug build").
"""

import glob
import importlib.util
import os
import sys

from setuptools import Extension, find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))


# Pure-Python modules of the package that are also compiled (an augmenting .pxd
# beside each declares its extension types); uncompiled they still run as Python.
COMPILED_PY = [os.path.join("snet", "core", "boxes.py"), os.path.join("snet", "core", "cells.py")]


def front_extensions():
    sources = sorted(glob.glob(os.path.join("snet_front", "*.pyx"))) + COMPILED_PY
    if not sources:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:  # pragma: no cover - pyproject.toml makes Cython available
        sys.exit("building snet needs Cython>=3.1 (pip install 'Cython>=3.1,<3.4')")
    debug = os.environ.get("SNET_FRONT_DEBUG", "") not in ("", "0")
    macros = [("SNET_FRONT_DEBUG", "1" if debug else "0"),
              ("SNET_SOURCES_DIGEST", f'"{sources_digest()}"')]
    if debug:
        macros.append(("CYTHON_TRACE_NOGIL", "1"))
    extensions = [
        Extension(
            os.path.splitext(src)[0].replace(os.sep, "."),
            [src],
            include_dirs=[os.path.join("snet_front", "includes")],
            define_macros=macros,
            extra_compile_args=["-O2", "-Werror=implicit-function-declaration"],  # (a function Cython named, never defined)
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


def sources_digest():
    """The digest the runtime carries of its sources (snet_front/sources.py; the test suite checks it)."""
    spec = importlib.util.spec_from_file_location("_snet_sources", os.path.join(HERE, "snet_front", "sources.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sources_digest(HERE)


def read_version():
    scope = {}
    with open(os.path.join(HERE, "snet", "_version.py")) as f:
        exec(f.read(), scope)
    return scope["__version__"]


# The distribution is called snet-lang (the name snet is taken on PyPI); the import
# package and the command are `snet`.  The examples in boxes/ stay in the repository:
# installed as a top-level package `boxes` they would shadow a user's own boxes module.
DISTRIBUTION = "snet-lang"
PACKAGES = find_packages(where=HERE, include=["snet", "snet.*", "snet_front"])
# py.typed: type checkers read the package's annotations; the grammar is read at run time.
PACKAGE_DATA = {"snet": ["py.typed"], "snet.syntax": ["*.lark"], "snet.core": ["*.pxd"],
                "snet_front": ["*.pxd", "*.pxi", "*.pyi", "py.typed", "includes/*"]}

# snet lsp, the language server for editors; the tests drive it, so the test extra has it.
LSP = ["pygls>=2.0,<3"]
# snet run --metrics-port, metrics_port=: the run's figures for Prometheus (snet.metrics); tests scrape them.
METRICS = ["prometheus-client>=0.17"]
# Cython: the source-distribution test runs setup.py sdist, which cythonizes (a build requirement otherwise).
TEST = LSP + METRICS + ["Cython>=3.1,<3.4", "pytest>=8", "pytest-benchmark>=4", "hypothesis>=6",
                        "interegular>=0.3", "numpy>=1.24", "mypy>=1.10", "trove-classifiers"]
# pyspark[connect] brings the Spark Connect client (grpcio, zstandard, ...) for sc:// masters.
# cloudpickle: the fallback of snet.spark.replicas where pyspark's own copy is missing.
SPARK = ["pyspark[connect]>=4.0,<5", "pandas>=2.2,<3", "pyarrow>=18", "cloudpickle>=2.0"]
EXAMPLES = ["numpy>=1.24"]
# The peers of bench/peers/ (pip install -e '.[peers]'); Ray is optional there (peers-ray): skipped when absent.
PEERS = ["dask[bag]>=2024.1", "bytewax>=0.21", "apache-beam>=2.60", "numpy>=1.24"]
PEERS_RAY = ["ray>=2.9"]

CLASSIFIERS = [
    "Development Status :: 3 - Alpha",
    "Intended Audience :: Developers",
    "Intended Audience :: Science/Research",
    "License :: OSI Approved :: MIT License",
    "Operating System :: POSIX :: Linux",
    "Programming Language :: Cython",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    # The compiled modules declare freethreading_compatible; CI runs the suite on 3.13t (.ci/freethreaded).
    "Programming Language :: Python :: Free Threading :: 2 - Beta",
    "Programming Language :: Python :: Implementation :: CPython",
    "Topic :: Software Development :: Compilers",
    "Topic :: System :: Distributed Computing",
    "Typing :: Typed",
]


if __name__ == "__main__":  # the build runs this file as a script; tests import it for PACKAGES
    setup(
        name=DISTRIBUTION,
        version=read_version(),
        description="S-Net, the declarative coordination language, with the FRONT work-stealing runtime",
        long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
        long_description_content_type="text/markdown",
        author="The snet authors",
        license="MIT",
        license_files=["LICENSE"],
        classifiers=CLASSIFIERS,
        keywords=["S-Net", "coordination language", "stream processing", "dataflow", "Spark"],
        python_requires=">=3.11",
        packages=PACKAGES,
        package_data=PACKAGE_DATA,
        exclude_package_data={"": ["*.c", "*.html"]},
        ext_modules=front_extensions(),
        # cloudpickle: box processes send functions from __main__, notebooks and closures by value.
        # rich: snet run --top draws its live table of the boxes with it.
        install_requires=["lark>=1.2,<2", "attrs>=23", "tqdm>=4.66", "cloudpickle>=2.0", "rich>=13"],
        extras_require={
            "examples": EXAMPLES,
            "test": TEST,
            "spark": SPARK,
            "lsp": LSP,
            "metrics": METRICS,
            "peers": PEERS,
            "peers-ray": PEERS_RAY,
            # Everything: what CI installs, and the README's test command.
            "all": sorted(set(TEST + SPARK + EXAMPLES)),
        },
        # The command, and the Pygments lexer of .snet files (pygmentize -l snet).
        entry_points={"console_scripts": ["snet = snet.__main__:main"],
                      "pygments.lexers": ["snet = snet.syntax.pygments_lexer:SNetLexer"]},
        zip_safe=False,
    )
