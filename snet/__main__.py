"""The ``snet`` command's entry point (also ``python -m snet``).

It imports nothing but :mod:`sys` before it guards against Ctrl-C: an
interrupt while the command line module and its imports load gives the
same one-line message and exit status as an interrupt during a run, never
a traceback.
"""

import sys


def main(argv=None):
    try:
        from snet.cli import main as cli_main
        return cli_main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
