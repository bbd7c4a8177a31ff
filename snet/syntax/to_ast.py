"""The lark Transformer that builds the AST while the LALR parser runs.

One method per grammar rule or alias; each only builds frozen nodes with
spans and checks nothing (names, duplicates and types are later passes).
It runs inline in the parser (``Lark(transformer=...)``), so no parse tree is
ever built.

Spans: a definition points at its name, a combinator at its (first)
operator, a filter at its ``[``, a synchro-cell at its ``[|``, a name
occurrence at the name, a binary tag-expression operator at the operator.
"""

from __future__ import annotations

from typing import cast

from lark import Token, Transformer

from snet.inlinecode import INLINE_LANGUAGE, InlineCodeError, compile_python, split_token
from snet.source import Source, Span
from snet.syntax import ast
from snet.syntax.lexer import int_value, tokenize
from snet.syntax.metadata import parse_metadata
from snet.tagexpr import Binary, Cond, Const, Ref, Unary

_BINARY_OPS = {"BARBAR": "||", "ANDAND": "&&", "EQEQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GTCMP": ">",
               "GE": ">=", "PLUS": "+", "MINUS": "-", "STAR": "*", "SLASH": "/", "PERCENT": "%",
               "MIN": "min", "MAX": "max"}
_UNARY_OPS = {"MINUS": "-", "BANG": "!", "ABS": "abs"}


class AstBuilder(Transformer):
    """Builds :mod:`snet.syntax.ast` nodes; one instance per parse."""

    def __init__(self, source: Source, line_of) -> None:
        super().__init__(visit_tokens=False)
        self.source = source
        self.line_of = line_of
        self.rts = False  # the reference distribution's dialect (set per parse)

    def span(self, tok: Token) -> Span:
        # Every token of the lexer has its position (lark's Token allows None, for tokens made by hand).
        return Span(self.source, cast(int, tok.line), cast(int, tok.column), cast(int, tok.end_line),
                    cast(int, tok.end_column))

    # ---- program and definitions

    def start(self, items):
        return ast.Program(tuple(items), Span(self.source, 1, 1, 1, 1))

    def metadata(self, items):
        tok = items[0]
        return parse_metadata(str(tok), tok.start_pos, self.source, self.line_of)

    def box_decl(self, items):
        name, inputs = items[0], items[1]
        outputs = tuple(t for t in items[2:] if not isinstance(t, Token))
        inline = None
        last = items[-1]
        if isinstance(last, Token) and last.type == "INLINE_CODE":  # only the rts lexer makes one
            parts = split_token(str(last), last.line, last.column)
            if parts.language.lower() == INLINE_LANGUAGE:
                labels = () if inputs is None else tuple(label.text for label in inputs)
                compile_python(str(name), labels, parts, self.source.name)
            inline = ast.InlineCode(parts.language, parts.code, parts.line, parts.column, self.span(last))
        return ast.BoxDecl(str(name), inputs, outputs, self.span(name), inline)

    def box_tuple(self, items):
        return tuple(items)

    def field_label(self, items):
        return ast.Label(str(items[0]), self.span(items[0]))

    def tag_label(self, items):
        return ast.Label(f"<{items[1]}>", self.span(items[0]))

    def btag_label(self, items):
        return ast.Label(f"<#{items[2]}>", self.span(items[0]))

    def net_def(self, items):
        name, signature, body, expr = items
        return ast.NetDef(str(name), signature, body, expr, self.span(name))

    def net_decl(self, items):
        name, signature = items
        return ast.NetDef(str(name), signature, None, None, self.span(name))

    def net_decl_bare(self, items):
        name = items[0]
        if not self.rts:  # the standard dialect's message for `net n;`, as before the rts form existed
            semicolon = next(tokenize(self.source.text[name.end_pos:]))  # comments may stand between
            line, column = self.line_of(name.end_pos + semicolon.start_pos)
            raise InlineCodeError("unexpected ';' (expected '(', 'connect', '{'); a net declared without a connect "
                                  "expression (net NAME;) is read in the rts dialect (--dialect rts)", line, column)
        return ast.NetDef(str(name), None, None, None, self.span(name))

    def net_sig(self, items):
        return items[0]

    def net_body(self, items):
        return tuple(items[1:])

    def type_def(self, items):
        return ast.TypeDef(str(items[0]), items[1], self.span(items[0]))

    def typesig_def(self, items):
        return ast.TypesigDef(str(items[0]), items[1], self.span(items[0]))

    def signature(self, items):
        return ast.Signature(tuple(items), items[0].span)

    def type_map(self, items):
        return ast.TypeMap(items[0], items[1], items[0].span)

    def open_type_map(self, items):
        return ast.TypeMap(items[0], None, items[0].span)

    def typesig_ref(self, items):
        return ast.TypesigRef(str(items[0]), self.span(items[0]))

    def type(self, items):
        atoms = tuple(t for t in items if not isinstance(t, Token))
        return ast.TypeExpr(atoms, atoms[0].span)

    def type_ref(self, items):
        return ast.TypeRef(str(items[0]), self.span(items[0]))

    def record_type(self, items):
        return ast.RecordType(tuple(items[1:]), self.span(items[0]))

    # ---- connect expressions

    def parallel(self, items):
        return ast.Parallel(tuple(items[0::2]), False, self.span(items[1]))

    def det_parallel(self, items):
        return ast.Parallel(tuple(items[0::2]), True, self.span(items[1]))

    def serial(self, items):
        return ast.Serial(tuple(items[0::2]), self.span(items[1]))

    def star(self, items):
        return ast.Star(items[0], items[2], False, self.span(items[1]))

    def det_star(self, items):
        return ast.Star(items[0], items[2], True, self.span(items[1]))

    def split(self, items):
        operand, op, tag = items
        return ast.Split(operand, tag, None, "BANGBANG" in op.type, "AT" in op.type, self.span(op))

    def range_split(self, items):
        operand, op, tag, hi = items
        return ast.Split(operand, tag, hi, "BANGBANG" in op.type, "AT" in op.type, self.span(op))

    def split_op(self, items):
        return items[0]

    def feedback(self, items):
        return ast.Feedback(items[0], items[2], self.span(items[1]))

    def placement(self, items):
        return ast.Placement(items[0], int_value(str(items[2])), self.span(items[1]))

    def patterns(self, items):
        return tuple(items)

    def guarded(self, items):
        guard = items[1] if len(items) > 1 else None
        return ast.Guarded(items[0], guard, items[0].span)

    def guard(self, items):
        return items[1]

    def tag_ref(self, items):
        if len(items) == 4:
            return ast.Label(f"<#{items[2]}>", self.span(items[0]))
        return ast.Label(f"<{items[1]}>", self.span(items[0]))

    def name_ref(self, items):
        return ast.NameRef(str(items[0]), self.span(items[0]))

    def identity(self, items):
        return ast.Identity(self.span(items[0]))

    def filter(self, items):
        return ast.Filter(items[1], items[2], self.span(items[0]))

    def sync_cell(self, items):
        return ast.SyncCell(tuple(items[1:]), self.span(items[0]))

    def action(self, items):
        return tuple(items[:-1]) + (ast.FilterClause(None, items[-1], items[-1][0].span if items[-1] else None),)

    def clause(self, items):
        return ast.FilterClause(items[0], items[1], items[0].span)

    def outputs(self, items):
        return tuple(items)

    def out_record(self, items):
        return ast.OutRecord(tuple(items[1:]), self.span(items[0]))

    def field_item(self, items):
        return ast.OutItem(str(items[0]), str(items[0]), None, self.span(items[0]))

    def rename_item(self, items):
        return ast.OutItem(str(items[0]), str(items[1]), None, self.span(items[0]))

    def tag_item(self, items):
        label = f"<{items[1]}>"
        return ast.OutItem(label, label, None, self.span(items[0]))

    def tag_assign(self, items):
        return ast.OutItem(f"<{items[1]}>", None, items[2], self.span(items[0]))

    def btag_item(self, items):
        label = f"<#{items[2]}>"
        return ast.OutItem(label, label, None, self.span(items[0]))

    def btag_assign(self, items):
        return ast.OutItem(f"<#{items[2]}>", None, items[3], self.span(items[0]))

    # ---- tag expressions

    def cond(self, items):
        return Cond(items[0], items[1], items[2], items[0].span)

    def binary(self, items):
        left, op, right = items
        return Binary(_BINARY_OPS[op.type], left, right, self.span(op))

    def unary(self, items):
        op, operand = items
        return Unary(_UNARY_OPS[op.type], operand, self.span(op))

    def const(self, items):
        return Const(int_value(str(items[0])), self.span(items[0]))

    def tag_read(self, items):
        return Ref(f"<{items[0]}>", self.span(items[0]))

    def btag_read(self, items):
        return Ref(f"<#{items[1]}>", self.span(items[0]))
