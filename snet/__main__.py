"""The ``snet`` command's entry point (also ``python -m snet``).

It imports nothing but :mod:`sys` before it guards against Ctrl-C: an
interrupt while the command line module and its imports load gives the
same one-line message and exit status as an interrupt during a run, never
a traceback.
"""

import sys


def main(argv=None):
    try:
        from snet import cli
        status = cli.main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        _end_now(1)
    if cli.interrupted:
        _end_now(status)
    from snet.commands.sparknative import silence_spark  # imports no pyspark that is not loaded

    silence_spark()  # the JVM's shutdown, when Python exits, logs nothing after the command's last line
    return status


def _end_now(status):
    """End an interrupted command at once: exit handlers run, streams are flushed, the teardown is skipped.

    The outputs were written and flushed before the message.  Tearing down
    the interpreter (freeing every module and what a diverging network had
    built) took seconds on a busy machine, and waits for the GIL that an
    abandoned worker may hold in a long call: Ctrl-C or SIGTERM must end
    the process promptly.
    """
    import atexit
    import os

    atexit._run_exitfuncs()  # pools of box processes, Spark's gateway, coverage...
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
