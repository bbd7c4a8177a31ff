"""``snet lsp``: the language server, on pygls, over standard input and output.

Features (each answer comes from :mod:`snet.lsp.documents`):

* **diagnostics** on open, change and save: the errors and warnings of
  ``snet check``, with their positions and messages;
* **hover** on a net, box, type or typesig name: a net's signature (the
  inferred one when it declares none), a box's declaration and where its
  Python function is;
* **go to definition**: from a box name to its function in the box module
  (``NET.py`` beside ``NET.snet``, read, never imported), from any other
  name to its definition in the file;
* **completion** of the labels and tags the file spells;
* **outline**: the document's nets, boxes, types and typesigs, local ones
  inside their net;
* **formatting**: the whole document as ``snet fmt`` writes it.

``snet lsp --dialect rts``, or the initialization option
``{"dialect": "rts"}``, reads files in the reference distribution's dialect.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from snet._version import __version__
from snet.lsp.documents import Document, Symbol, analyse_document, completions, definition, hover, outline
from snet.syntax.parser import parse

_SYMBOL_KINDS = {"net": types.SymbolKind.Module, "box": types.SymbolKind.Function,
                 "type": types.SymbolKind.Struct, "typesig": types.SymbolKind.Interface}
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


class SNetLanguageServer(LanguageServer):
    """The server, with the last analysis of each open document."""

    def __init__(self) -> None:
        super().__init__("snet", __version__)
        self.dialect = "standard"
        self.documents: dict[str, Document] = {}
        self.known_labels: dict[str, set[str]] = {}  # labels of each document's last good parse

    def analyse(self, uri: str) -> Document:
        """Analyse the document's current text and publish its diagnostics."""
        source = self.workspace.get_text_document(uri)
        try:
            doc = analyse_document(source.source, to_fs_path(uri) or uri, self.dialect)
        except Exception as error:  # noqa: BLE001 - a fault of the server: say so, keep serving
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message=f"snet lsp: internal error on {uri}: {error!r}"))
            raise
        self.documents[uri] = doc
        if doc.program is not None:
            self.known_labels[uri] = doc.labels
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=source.version, diagnostics=[_diagnostic(p) for p in doc.problems]))
        return doc

    def document(self, uri: str) -> Document:
        doc = self.documents.get(uri)
        if doc is None or doc.text != self.workspace.get_text_document(uri).source:
            doc = self.analyse(uri)
        return doc


def _range(line: int, column: int, end_line: int, end_column: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=column),
                       end=types.Position(line=end_line, character=end_column))


def _diagnostic(p) -> types.Diagnostic:
    return types.Diagnostic(range=_range(p.line, p.column, p.end_line, p.end_column), message=p.message,
                            severity=_SEVERITY.get(p.severity, types.DiagnosticSeverity.Error), source="snet")


def build_server(dialect: str = "standard") -> SNetLanguageServer:
    server = SNetLanguageServer()
    server.dialect = dialect

    @server.feature(types.INITIALIZE)
    def initialize(ls: SNetLanguageServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and options.get("dialect") in ("standard", "rts"):
            ls.dialect = options["dialect"]

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SNetLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.analyse(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SNetLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.analyse(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: SNetLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.analyse(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SNetLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.documents.pop(params.text_document.uri, None)
        ls.known_labels.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                            diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: SNetLanguageServer, params: types.HoverParams) -> types.Hover | None:
        doc = ls.document(params.text_document.uri)
        text = hover(doc, params.position.line, params.position.character)
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def on_definition(ls: SNetLanguageServer, params: types.DefinitionParams) -> types.Location | None:
        doc = ls.document(params.text_document.uri)
        found = definition(doc, params.position.line, params.position.character)
        if found is None:
            return None
        path, line, column = found
        uri = params.text_document.uri if path == doc.path else _file_uri(path)
        return types.Location(uri=uri, range=_range(line, column, line, column))

    @server.feature(types.TEXT_DOCUMENT_COMPLETION,
                    types.CompletionOptions(trigger_characters=["<", "{", ",", "#"]))
    def on_completion(ls: SNetLanguageServer, params: types.CompletionParams) -> types.CompletionList:
        uri = params.text_document.uri
        doc = ls.document(uri)
        line, column = params.position.line, params.position.character
        start, labels = completions(doc, ls.known_labels.get(uri, set()), line, column)
        items = [types.CompletionItem(
            label=label, kind=types.CompletionItemKind.Variable if label.startswith("<")
            else types.CompletionItemKind.Field,
            detail="tag" if label.startswith("<") else "field",
            text_edit=types.TextEdit(range=_range(line, start, line, column), new_text=label)) for label in labels]
        return types.CompletionList(is_incomplete=False, items=items)

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def on_symbols(ls: SNetLanguageServer, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
        return [_symbol(s) for s in outline(ls.document(params.text_document.uri))]

    @server.feature(types.TEXT_DOCUMENT_FORMATTING)
    def on_formatting(ls: SNetLanguageServer, params: types.DocumentFormattingParams) -> list[types.TextEdit] | None:
        from snet.errors import SNetSyntaxError
        from snet.syntax.formatter import format_text

        text = ls.workspace.get_text_document(params.text_document.uri).source
        try:
            new = format_text(text, dialect=ls.dialect)
        except SNetSyntaxError:
            return None  # the diagnostics already say where
        if new == text:
            return []
        lines = text.split("\n")
        return [types.TextEdit(range=_range(0, 0, len(lines), 0), new_text=new)]

    return server


def _symbol(s: Symbol) -> types.DocumentSymbol:
    name_end = (s.name_at[0], s.name_at[1] + len(s.name))
    return types.DocumentSymbol(name=s.name, kind=_SYMBOL_KINDS[s.kind], detail=s.kind,
                                range=_range(*s.start, *s.end), selection_range=_range(*s.name_at, *name_end),
                                children=[_symbol(c) for c in s.children])


def _file_uri(path: str) -> str:
    from pathlib import Path

    return Path(path).resolve().as_uri()


def serve(dialect: str = "standard") -> int:
    """Serve one editor on standard input and output until it says exit."""
    parse("net warm connect [];")  # load the grammar before the first request
    build_server(dialect).start_io()
    return 0
