"""``snet spark-submit``: run ``snet run`` under Spark's own ``spark-submit``.

::

    snet spark-submit [SPARK-SUBMIT OPTIONS] -- NET.snet [SNET RUN OPTIONS]

Everything before ``--`` goes to ``spark-submit``, except snet's own
``--dry-run`` (print the command) and ``--spark-submit PROGRAM`` (default:
``$SPARK_HOME/bin/spark-submit``, the pyspark package's, or ``PATH``'s);
after ``--`` come the arguments of ``snet run``, with ``--spark MASTER``
added from ``--master`` (or ``$SNET_SPARK_MASTER``).  In client mode (the
default) the run ships the package and box folders itself
(:mod:`snet.spark.cluster.shipping`); in cluster mode (YARN, Kubernetes) the
driver starts on a cluster node, so ``--py-files`` carries a zip of snet and
what its front end imports and the box folders' zips, and ``--files`` the
``.snet`` file and box files, named by their base names in the driver's
folder.  The master is checked first (:mod:`snet.spark.cluster.preflight`);
otherwise the exit status is ``spark-submit``'s, the driver's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

from snet.errors import SNetUsageError

USAGE = "snet spark-submit [SPARK-SUBMIT OPTIONS] -- NET.snet [SNET RUN OPTIONS]"
DRIVER_PACKAGES = ("snet", "attr", "attrs", "lark", "tqdm")  # what the driver imports, all pure Python

PRIMARY = '''"""The primary file that snet spark-submit gives spark-submit: snet's command line."""
import sys

from snet.__main__ import main

sys.exit(main())
'''


def spark_submit_program() -> str:
    home = os.environ.get("SPARK_HOME")
    candidates = [os.path.join(home, "bin", "spark-submit")] if home else []
    try:
        import pyspark

        candidates.append(os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"))
    except ImportError:
        pass
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("spark-submit")
    if found is None:
        raise SNetUsageError("spark-submit not found: install pyspark (the spark extra) or set SPARK_HOME")
    return found


def _option(args: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in spark-submit's arguments (the last one)."""
    value = None
    for i, word in enumerate(args):
        if word == name and i + 1 < len(args):
            value = args[i + 1]
        elif word.startswith(name + "="):
            value = word.partition("=")[2]
    return value


def _zip_packages(target: str, packages: tuple[str, ...]) -> str:
    import importlib

    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for package in packages:
            module = importlib.import_module(package)
            if module.__file__ is None:
                raise SNetUsageError(f"cannot ship {package} to spark-submit: it is not imported from a file")
            root = os.path.dirname(os.path.abspath(module.__file__))
            for directory, dirs, files in os.walk(root):
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                for name in files:
                    if name.endswith((".py", ".lark", ".typed")):
                        full = os.path.join(directory, name)
                        z.write(full, os.path.join(package, os.path.relpath(full, root)))
    return target


def build_command(argv: list[str], workdir: str, run_parser) -> list[str]:
    """The spark-submit command for ``argv`` (the words after ``snet spark-submit``), files made in ``workdir``.

    ``run_parser``: the command line's parser, which checks the ``snet run`` arguments.
    """
    from snet.spark.cluster.preflight import addresses
    from snet.spark.cluster.shipping import folder_zip

    if "--" not in argv:
        raise SNetUsageError(f"usage: {USAGE} (the '--' is missing)")
    cut = argv.index("--")
    submit, run = list(argv[:cut]), list(argv[cut + 1:])
    program = _option(submit, "--spark-submit")
    for own in ("--spark-submit", "--dry-run"):
        while own in submit:
            i = submit.index(own)
            del submit[i:i + (2 if own == "--spark-submit" else 1)]
        submit = [w for w in submit if not w.startswith(own + "=")]
    master = _option(submit, "--master") or os.environ.get("SNET_SPARK_MASTER")
    if not master:
        raise SNetUsageError("snet spark-submit needs --master MASTER (or $SNET_SPARK_MASTER)")
    addresses(master)
    if _option(submit, "--master") is None:
        submit = ["--master", master, *submit]
    mode = _option(submit, "--deploy-mode") or "client"
    if mode not in ("client", "cluster"):
        raise SNetUsageError(f"--deploy-mode takes client or cluster, not '{mode}'")
    if mode == "cluster" and master.startswith(("spark://", "local")):
        raise SNetUsageError(f"Spark runs no Python driver in cluster mode on {master.split('://')[0].split('[')[0]} "
                             "masters: use --deploy-mode client (the default), or YARN or Kubernetes")
    try:
        args = run_parser.parse_args(["run", *run])
    except SystemExit:
        raise SNetUsageError(f"the snet run arguments after '--' are not valid: {' '.join(run)}") from None
    spark = args.spark
    if spark is None:
        run += ["--spark", master]
    elif spark != master:
        raise SNetUsageError(f"--spark {spark} after '--' is not the --master {master} given to spark-submit")
    primary = os.path.join(workdir, "snet_submit_main.py")
    with open(primary, "w") as f:
        f.write(PRIMARY)
    if mode == "cluster":
        net = args.net_file
        box_files = [b for b in args.boxes if b.endswith(".py")] or \
            ([os.path.splitext(net)[0] + ".py"] if os.path.isfile(os.path.splitext(net)[0] + ".py") else [])
        py_files = [_zip_packages(os.path.join(workdir, "snet_driver.zip"), DRIVER_PACKAGES)]
        py_files += sorted({folder_zip(b, workdir) for b in box_files})
        files = [os.path.abspath(net)] + [os.path.abspath(b) for b in box_files]
        run = [_base_name(w, net, box_files) for w in run]
        submit += ["--py-files", ",".join(py_files), "--files", ",".join(files)]
    confs = [c.partition("=")[0] for i, c in enumerate(submit) if i and submit[i - 1] == "--conf"]
    confs += [w.partition("=")[2].partition("=")[0] for w in submit if w.startswith("--conf=")]
    extra = []
    if mode == "client" and "spark.pyspark.driver.python" not in confs:
        extra += ["--conf", f"spark.pyspark.driver.python={sys.executable}"]
    if "spark.log.level" not in confs:
        extra += ["--conf", "spark.log.level=WARN"]  # spark-submit's default INFO buries snet's own lines
    return [program or spark_submit_program(), *submit, *extra, primary, "run", *run]


def _base_name(word: str, net: str, box_files: list[str]) -> str:
    """In cluster mode the driver finds the shipped files by base name in its working folder."""
    return os.path.basename(word) if word == net or word in box_files else word


def submit_command(argv: list[str], run_parser) -> int:
    from snet.spark.cluster.preflight import check_master
    from snet.spark.cluster.session import prepare_environment

    dry = "--dry-run" in argv[:argv.index("--")] if "--" in argv else False
    workdir = tempfile.mkdtemp(prefix="snet-submit-")
    try:
        command = build_command(argv, workdir, run_parser)
        master = command[command.index("--master") + 1]
        if dry:
            print(" ".join(_quoted(w) for w in command))
            return 0
        check_master(master)
        prepare_environment(master)
        return subprocess.run(command).returncode
    finally:
        if not dry:
            shutil.rmtree(workdir, ignore_errors=True)


def _quoted(word: str) -> str:
    import shlex

    return shlex.quote(word)
