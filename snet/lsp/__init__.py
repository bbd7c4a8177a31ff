"""The language server for editors (``snet lsp``); it needs pygls (``pip install 'snet-lang[lsp]'``)."""

from __future__ import annotations

import argparse

from snet.errors import SNetUsageError


def lsp_command(args: argparse.Namespace) -> int:
    try:
        from snet.lsp.server import serve
    except ImportError as e:
        if (e.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise
        raise SNetUsageError("snet lsp needs pygls, which is not installed: "
                             "pip install 'snet-lang[lsp]' (or pip install pygls)") from None
    return serve(getattr(args, "dialect", None) or "standard")
