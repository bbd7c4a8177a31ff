"""S-Net XML record files: the format of the reference S-Net distribution.

A file is a sequence of ``<record type="data">`` elements with
``<field label="x">``, ``<tag label="t">`` and ``<btag label="b">``
children, ended by ``<record type="terminate"/>`` or by the end of the file
(interfaces.md §3).  Such a file is not an XML document: it has no root
element and usually repeats the XML declaration before every record.

How it is read, and why.  The file may be far larger than memory, so it is
parsed incrementally with expat (``xml.parsers.expat``) fed a chunk at a time:

* A synthetic root element is fed first, so that the records are its
  children and expat accepts more than one of them.
* XML declarations after the start are illegal inside a document, so a small
  lexical filter (``DeclarationFilter``) turns every ``<?xml ...?>`` into a
  processing instruction of the same length, which expat ignores, before the
  text reaches expat: lines and columns stay those of the file.  The filter
  knows comments, CDATA sections and processing instructions, the only
  places where ``<?xml`` can occur without being markup; everywhere else
  ``<`` starts markup.  It holds back at most a few characters, so a
  construct of any length costs linear time.
* Bytes are decoded here, not by expat, with the encoding named by the first
  declaration (UTF-8 by default); the encodings later declarations name are
  ignored, since one stream has one encoding.  A declared encoding must read
  ASCII as ASCII (the declaration naming it was found as ASCII bytes): one
  that does not (``utf-16`` without a byte-order mark, EBCDIC, ``rot13``) is
  an error at line 1, not a stream of garbage.
* The handlers build one record at a time and queue it; the reader yields
  the queued records after each chunk, so records before a malformed one are
  delivered before its error.  Every error a chunk can stop at is turned
  into a value first and raised only after the queue is empty: an expat
  error, a handler's ``RecordFileError`` (an over-long integer, a ``(json)``
  value nested too deeply ...), and bytes the decoder refuses, in which case
  the text before them is decoded and parsed first.  A terminate record
  stops the reader at once: its handler raises, expat stops mid-chunk, and
  nothing after it is read or decoded.
* Expat (before 2.6) scans an unfinished token again from its start each
  time it is fed, so a comment, processing instruction or start tag of many
  megabytes fed chunk by chunk costs quadratic time.  Once expat holds
  ``_LONG_TOKEN`` bytes of one token, the reader feeds it pieces at least as
  large as what it holds (the byte index expat reports tells how much that
  is), so the reader's chunk size no longer matters.  ``pyexpat`` itself
  hands expat at most 1 MiB per call, though, so such a token still costs
  about n^2 / 2 MiB of scanning (a 64 MB comment: a few seconds), sixteen
  times less than chunk by chunk.  Character data, CDATA sections included,
  is reported as it is scanned and never costs more than linear time.

Rejected: ``ElementTree.iterparse`` gives no line numbers for elements and
cannot be told to skip declarations; a hand-written tokenizer would have to
re-implement entities, character references, CDATA and well-formedness
checks that expat already does in C.

Records are written one per line with the values in C4SNet form
(``c4snet``); the writer emits an XML declaration first and a terminate
record when closed.
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from typing import IO, Any, Final, Iterator
from xml.parsers import expat

from snet.errors import SNetRuntimeError
from snet.records import is_valid_label
from snet.recordio.c4snet import decode_field, encode_field
from snet.recordio.c4snet_binary import NotBinaryForm, binary_field, decode_binary_field, looks_binary
from snet.recordio.streams import BatchWriter, RecordFileError, read_chunk_function
from snet.recordio.values import ValueFormError, long_integer_problem, long_tag_error, too_deep_to_write

CHUNK_SIZE: Final = 1 << 16
# Expat re-scans an unfinished token from its start each time it is fed more
# (before expat 2.6), so a token of n bytes fed in chunks costs n^2 / CHUNK_SIZE.
# Once expat holds this much of one token, the reader feeds it text in pieces
# at least as large as what it holds (see the module docstring).
_LONG_TOKEN: Final = 1 << 20

_ROOT: Final = "snet-records"
_ROOT_OPEN: Final = f"<{_ROOT}>"
_INT_TEXT = re.compile(r"[+-]?\d+\Z", re.ASCII)


class _Terminated(Exception):
    """Raised by a handler at the terminate record, to stop expat mid-chunk."""


# --------------------------------------------------------------------------
# The declaration filter

_MARKUP = re.compile(r"<(?:\?|!--|!\[CDATA\[)")
_MARKUP_END: Final = {"<?": "?>", "<!--": "-->", "<![CDATA[": "]]>"}
_PARTIAL_MARKUP: Final = ("<!--", "<![CDATA[")
_AFTER_XML: Final = (" ", "\t", "\r", "\n", "?")  # "<?xml-stylesheet" is a PI, not a declaration
_DECLARATION_AS_PI: Final = "<?xm_"  # as long as "<?xml": columns and lines stay those of the file


class DeclarationFilter:
    """Turns XML declarations into ignored processing instructions, in text fed in arbitrary chunks.

    ``<?xml version="1.0"?>`` becomes ``<?xm_ version="1.0"?>``: a
    processing instruction, which expat accepts anywhere and the reader
    ignores, of exactly the same length, so that expat's lines and columns
    are those of the file.  Renaming rather than removing also means the
    filter never holds a construct back until its end has arrived: a
    comment, CDATA section or processing instruction of any length passes
    through as it comes, and the work is linear in the input.

    Invariant: ``_carry`` is a short suffix of the input (under 9
    characters) not passed on yet because it may begin a token whose
    meaning depends on what follows (``<!-``, ``<?xm``, ``]]``);
    ``_close`` is the end (``-->``, ``]]>``, ``?>``) of the construct the
    text passed on so far ends inside, or None outside one.
    """

    __slots__ = ("_carry", "_close")

    def __init__(self) -> None:
        self._carry = ""
        self._close: str | None = None

    def feed(self, text: str, final: bool = False) -> str:
        """The text to pass on, given the next chunk `text`."""
        buf = self._carry + text if self._carry else text
        self._carry = ""
        out = []
        pos = 0
        n = len(buf)
        search = _MARKUP.search
        while True:
            close = self._close
            if close is not None:  # inside a comment, CDATA section or PI: look for its end only
                end = buf.find(close, pos)
                if end < 0:
                    keep = 0 if final else min(len(close) - 1, n - pos)  # the end may straddle chunks
                    out.append(buf[pos:n - keep])
                    self._carry = buf[n - keep:]
                    return "".join(out)
                end += len(close)
                out.append(buf[pos:end])
                pos = end
                self._close = None
                continue
            m = search(buf, pos)
            if m is None:
                break
            start = m.start()
            token = m.group()
            if token == "<?":
                if n - start < 6 and not final:  # not yet known whether it is "<?xml" + a space
                    out.append(buf[pos:start])
                    self._carry = buf[start:]
                    return "".join(out)
                if buf.startswith("<?xml", start) and buf[start + 5: start + 6] in _AFTER_XML:
                    out.append(buf[pos:start])
                    out.append(_DECLARATION_AS_PI)
                    pos = start + 5
                    self._close = "?>"
                    continue
            out.append(buf[pos:m.end()])
            pos = m.end()
            self._close = _MARKUP_END[token]
        if not final:
            # A chunk may end inside the opening of a construct ("<!-", "<![CD").
            lt = buf.rfind("<", max(pos, n - 8))
            if lt >= 0 and any(opening.startswith(buf[lt:]) for opening in _PARTIAL_MARKUP):
                out.append(buf[pos:lt])
                self._carry = buf[lt:]
                return "".join(out)
        out.append(buf[pos:])
        return "".join(out)


# --------------------------------------------------------------------------
# Reading

# S-Net spelling of an item's label: prefix and suffix around the name.
_ITEM_AFFIXES: Final = {"field": ("", ""), "tag": ("<", ">"), "btag": ("<#", ">")}


def _decode_unmarked(text: str) -> Any:
    """A field of a record without a ``mode`` attribute whose text is not ``(TYPE)...``: the binary form.

    The reference distribution reads such a record as binary, and its example
    inputs rely on it; a text in neither form is reported as such.
    """
    try:
        return decode_binary_field(text)
    except NotBinaryForm:
        shown = text.strip()
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise ValueFormError(f"not a C4SNet value (expected the textual form (TYPE)VALUE or (TYPE[N])V1,V2,..., "
                             f"or the binary form, a type digit then base64 bytes): '{shown}'") from None


class _RecordBuilder:
    """Expat handlers that build records; completed ones wait in ``ready``.

    Element depth: 0 is the synthetic root, 1 a record, 2 a field/tag/btag.
    The handlers run once per element of a file that may hold millions, so
    the common path of each is a few attribute accesses and dict lookups;
    the checks that need more live in the ``_start_*`` slow paths.
    """

    def __init__(self, parser: Any, name: str, allow_pickle: bool):
        self.parser = parser
        self.name = name
        self.allow_pickle = allow_pickle
        self.ready: deque[dict] = deque()
        self.depth = -1
        self.record: dict = {}
        self.record_line = 0
        # The item (field/tag/btag) being read, while depth == 2:
        self.item_kind = ""
        self.item_label = ""
        self.item_name = ""
        self.item_line = 0
        self.text = ""  # usually delivered in one piece (buffer_text)
        self.pieces: list[str] | None = None  # the pieces of a text that came in several
        self.valid_names: set[str] = set()
        self.binary = False  # the record being read has mode="binary"
        self.textual = False  # ... mode="textual"; with neither, each field's text decides (_decode_unmarked)

    def error(self, line: int, problem: str) -> RecordFileError:
        return RecordFileError(self.name, line, problem)

    def start(self, tag: str, attrs: dict) -> None:
        depth = self.depth = self.depth + 1
        if depth == 2:
            affixes = _ITEM_AFFIXES.get(tag)
            name = attrs.get("label")
            if affixes is None or name is None or name not in self.valid_names:
                affixes, name = self._start_item_slowly(tag, attrs)
            label = affixes[0] + name + affixes[1]
            if label in self.record:
                kind = tag.rpartition(":")[2]
                raise self.error(self.parser.CurrentLineNumber, f"{kind} '{name}' appears twice in one record")
            self.item_kind = tag
            self.item_label = label
            self.item_name = name
            self.item_line = self.parser.CurrentLineNumber
            self.text = ""
        elif depth == 1:
            if tag == "record" and attrs.get("type") == "data":
                self.record = {}
                self.record_line = self.parser.CurrentLineNumber
                mode = attrs.get("mode")
                self.binary = mode == "binary"
                self.textual = mode == "textual"
            else:
                self._start_record_slowly(tag, attrs)
        elif depth > 2:
            raise self.error(self.parser.CurrentLineNumber,
                             f"unexpected element <{tag}> inside <{self.item_kind}>")

    def _start_record_slowly(self, tag: str, attrs: dict) -> None:
        line = self.parser.CurrentLineNumber
        if tag.rpartition(":")[2] != "record":
            raise self.error(line, f"unknown element <{tag}> (expected <record>)")
        kind = attrs.get("type")
        if kind == "data":
            self.record = {}
            self.record_line = line
            mode = attrs.get("mode")
            self.binary = mode == "binary"
            self.textual = mode == "textual"
        elif kind == "terminate":
            raise _Terminated
        elif kind is None:
            raise self.error(line, '<record> without a type attribute (expected type="data" or type="terminate")')
        else:
            raise self.error(line, f"unknown record type '{kind}' (expected data or terminate)")

    def _start_item_slowly(self, tag: str, attrs: dict) -> tuple[tuple[str, str], str]:
        line = self.parser.CurrentLineNumber
        local = tag.rpartition(":")[2]
        affixes = _ITEM_AFFIXES.get(local)
        if affixes is None:
            raise self.error(line, f"unknown element <{tag}> in a record (expected <field>, <tag> or <btag>)")
        name = attrs.get("label")
        if name is None:
            raise self.error(line, f"<{local}> without a label attribute")
        if name not in self.valid_names:
            if not is_valid_label(name) or name.startswith("<"):
                raise self.error(line, f"invalid label '{name}' on <{local}>: a label is a letter or _ "
                                       f"then letters, digits and _")
            self.valid_names.add(name)
        return affixes, name

    def end(self, tag: str) -> None:
        depth = self.depth
        self.depth = depth - 1
        if depth == 2:
            text = self.text
            if self.pieces is not None:
                text = "".join(self.pieces)
                self.pieces = None
            if self.item_label[0] != "<":
                try:
                    if self.textual or not looks_binary(text):
                        value = decode_field(text, self.allow_pickle)
                    elif self.binary:
                        value = decode_binary_field(text)
                    else:
                        value = _decode_unmarked(text)
                except ValueFormError as exc:
                    raise self.error(self.item_line, f"field '{self.item_name}': {exc}") from None
            elif _INT_TEXT.match(text):
                try:
                    value = int(text)
                except ValueError:  # more digits than the interpreter converts
                    raise self._long_tag() from None
            else:
                value = self._tag_value_slowly(text)
            self.record[self.item_label] = value
        elif depth == 1:
            self.ready.append(self.record)

    def _tag_value_slowly(self, text: str) -> int:
        stripped = text.strip()
        if not stripped:
            return 0
        if _INT_TEXT.match(stripped):
            try:
                return int(stripped)
            except ValueError:
                raise self._long_tag() from None
        shown = stripped if len(stripped) <= 40 else stripped[:37] + "..."
        kind = self.item_kind.rpartition(":")[2]
        raise self.error(self.item_line, f"{kind} '{self.item_name}' must hold an integer, not '{shown}'")

    def _long_tag(self) -> RecordFileError:
        kind = self.item_kind.rpartition(":")[2]
        return self.error(self.item_line, f"{kind} '{self.item_name}': {long_integer_problem()}")

    def characters(self, data: str) -> None:
        if self.depth == 2:
            if self.text:
                self._more_text(data)
            else:
                self.text = data
        elif not data.isspace():
            self._stray_text(data)

    def _more_text(self, data: str) -> None:
        # A value in several pieces (a long one, or one with a comment inside):
        # collected in a list, since repeated += would copy it once per piece.
        if self.pieces is None:
            self.pieces = [self.text]
        self.pieces.append(data)

    def _stray_text(self, data: str) -> None:
        where = "between the elements of a record" if self.depth == 1 else "outside a record"
        text = data.strip()
        shown = text.split("\n", 1)[0]
        shown = shown if len(shown) <= 30 and shown == text else shown[:27] + "..."
        if not shown.isprintable():  # control characters, a byte-order mark: show them as escapes
            shown = shown.encode("ascii", "backslashreplace").decode("ascii")
        hint = " (is this JSON Lines? give --format jsonl)" if text.startswith("{") else ""
        if text.startswith("\ufeff"):
            hint = " (a byte-order mark in the middle of the input: were files joined?)"
        # Buffered text arrives when the markup after it is reached: count
        # back to the line of its first non-blank character.
        leading = data[: len(data) - len(data.lstrip())]
        line = self.parser.CurrentLineNumber - data.count("\n") + leading.count("\n")
        raise self.error(max(line, 1), f"unexpected text {where}: '{shown}'{hint}")


_DECL_ENCODING = re.compile(rb"""^<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""")

# Text every encoding a declaration may name must read as itself: the
# declaration naming it was found by reading the file's first bytes as ASCII.
# (The backslash stands before "u0041" so that escape codecs fail the test
# without a warning about an unknown escape.)
_ASCII_PROBE: Final = "".join(chr(c) for c in range(32, 127) if c != 92) + "\t\r\n\\u0041"


def _sniff_encoding(head: bytes) -> tuple[str, bool]:
    """(codec name, whether it came from a byte-order mark) for a file starting with `head`."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig", True
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):  # before UTF-16: FF FE begins both
        return "utf-32", True
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16", True
    m = _DECL_ENCODING.match(head)
    return (m.group(1).decode("ascii") if m else "utf-8"), False


def _declared_decoder(encoding: str, name: str) -> codecs.IncrementalDecoder:
    """An incremental decoder for the encoding an XML declaration names.

    Raises:
        RecordFileError: an unknown encoding, or one that is not a text
            encoding in which ASCII reads as ASCII (``rot13``, ``base64``,
            ``utf-16`` without a byte-order mark, EBCDIC ...): such a file
            either is not in that encoding or could never have been sniffed.
    """
    try:
        factory = codecs.getincrementaldecoder(encoding)
    except LookupError:
        raise RecordFileError(name, 1, f"unknown encoding '{encoding}' in the XML declaration") from None
    try:
        fits = factory("strict").decode(_ASCII_PROBE.encode("ascii"), True) == _ASCII_PROBE
    except Exception:  # codecs raise what they like on text they cannot take (LookupError, UnicodeError, ...)
        fits = False
    if not fits:
        raise RecordFileError(
            name, 1, f"unsupported encoding '{encoding}' in the XML declaration: not a text encoding "
                     f"that reads ASCII as ASCII (a UTF-16 or UTF-32 file needs a byte-order mark)")
    return factory("strict")


def _decoded_prefix(decoder: Any, state: Any, chunk: bytes, exc: UnicodeError) -> str:
    """The text of `chunk` before the bytes `decoder` failed on, decoded from `state` (taken before)."""
    start = 0
    if isinstance(exc, UnicodeDecodeError) and exc.object.endswith(chunk):
        # The decoder saw the bytes it had pending, then `chunk`.
        start = min(max(exc.start - (len(exc.object) - len(chunk)), 0), len(chunk))
    try:
        decoder.setstate(state)
        return decoder.decode(chunk[:start])
    except Exception:  # should not happen; the error itself is what matters
        return ""


def read_xml(f: IO, name: str, *, allow_pickle: bool = False) -> Iterator[dict]:
    """Records from the S-Net XML file object `f` (bytes or text), read incrementally.

    Raises:
        RecordFileError: at the first malformed record, after the records before it.
    """
    read = read_chunk_function(f, CHUNK_SIZE)
    first = read()
    decoder = None
    if isinstance(first, bytes):
        head = first
        while head and (len(head) < 5 or (head.lstrip(codecs.BOM_UTF8).startswith(b"<?xml")
                                          and b"?>" not in head and len(head) < 1024)):
            more = read()
            if not more:
                break
            head += more
        first = head
        encoding, from_bom = _sniff_encoding(head)
        if from_bom:
            decoder = codecs.getincrementaldecoder(encoding)("strict")
        else:
            decoder = _declared_decoder(encoding, name)
    elif first.startswith("\ufeff"):  # a byte-order mark left in by a text-mode caller
        first = first[1:]

    parser = expat.ParserCreate()
    parser.buffer_text = True
    builder = _RecordBuilder(parser, name, allow_pickle)
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.characters
    declarations = DeclarationFilter()
    newlines = 0  # line breaks decoded so far: decoding errors are positioned by them, expat never sees those
    fed = 0  # UTF-8 bytes given to expat (its byte index counts those)
    fed_lines = 1  # the line expat has reached the end of
    held: list[str] = []  # text kept from expat while it is inside a long token (see _LONG_TOKEN)
    held_size = 0
    parse = parser.Parse

    def feed(text: str, final: bool = False) -> BaseException | None:
        """Parse `text`; return the error or _Terminated that stopped it, if any.

        Every error is returned, not raised, so that the records completed
        before it are yielded first: a handler that raises something else
        than a ``RecordFileError`` is a bug, but it must not lose them either.
        """
        nonlocal fed, fed_lines
        try:
            parse(text, final)
        except (RecordFileError, _Terminated) as exc:
            return exc
        except expat.ExpatError as exc:
            column = exc.offset + 1 - (len(_ROOT_OPEN) if exc.lineno == 1 else 0)
            return RecordFileError(name, exc.lineno, f"invalid XML: {expat.ErrorString(exc.code)} (column {column})")
        except UnicodeEncodeError as exc:  # a lone surrogate in text from a text-mode source
            stop = feed(text[: exc.start])
            line = fed_lines
            return stop or RecordFileError(name, line, f"a lone surrogate ({ascii(exc.object[exc.start])}) "
                                                       f"in the input, which cannot be UTF-8 or any XML text")
        except Exception as exc:
            return exc
        fed += len(text) if text.isascii() else len(text.encode("utf-8"))
        fed_lines += text.count("\n")
        return None

    stop = feed(_ROOT_OPEN)
    chunk = first
    try:
        while chunk:
            undecodable = None
            if decoder is not None:
                state = decoder.getstate()
                try:
                    text = decoder.decode(chunk)
                except UnicodeError as exc:
                    # The text before the bad bytes still holds good records: parse it first.
                    text = _decoded_prefix(decoder, state, chunk, exc)
                    reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
                    undecodable = RecordFileError(name, newlines + text.count("\n") + 1,
                                                  f"cannot decode the input as {getattr(exc, 'encoding', encoding)}: "
                                                  f"{reason}")
            else:
                text = chunk
            newlines += text.count("\n")
            text = declarations.feed(text)
            backlog = fed - parser.CurrentByteIndex  # bytes of an unfinished token expat holds
            if backlog >= _LONG_TOKEN or held:
                held.append(text)
                held_size += len(text)
                if held_size < backlog and undecodable is None:
                    chunk = read()
                    continue
                text = "".join(held)
                held.clear()
                held_size = 0
            stop = feed(text)
            ready = builder.ready
            while ready:
                yield ready.popleft()
            if stop is None:
                stop = undecodable
            if stop is not None:
                break
            chunk = read()
        else:
            if decoder is not None:
                try:
                    tail = decoder.decode(b"", True)
                except UnicodeError as exc:
                    reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
                    tail = ""
                    stop = RecordFileError(name, newlines + 1, f"the input ends inside a character ({reason})")
            else:
                tail = ""
            text = "".join(held) + declarations.feed(tail, final=True)
            stop = feed(text) or stop
            if stop is None:
                if builder.depth >= 1:
                    stop = RecordFileError(name, builder.record_line,
                                           "the input ends inside this <record> (no </record>)")
                else:
                    stop = feed(f"</{_ROOT}>", True)
            ready = builder.ready
            while ready:
                yield ready.popleft()
        if stop is not None and not isinstance(stop, _Terminated):
            raise stop
    finally:
        parser.StartElementHandler = parser.EndElementHandler = parser.CharacterDataHandler = None


# --------------------------------------------------------------------------
# Writing

_RECORD_OPEN: Final = '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">'
_TERMINATE: Final = '<record xmlns="snet-home.org" type="terminate"/>\n'

# Labels already validated for output (bounded and shared, as in ``jsonl``).
_KNOWN_LABELS: set = set()
_KNOWN_LABELS_MAX: Final = 4096


def format_record_xml(record: dict) -> str:
    """One data record as a line of S-Net XML (with its newline).

    Raises:
        SNetRuntimeError: an invalid label, a tag that is not an int, or a
            field value that can be neither written in any form nor pickled.
    """
    try:
        parts = [_RECORD_OPEN]
        append = parts.append
        for label, value in record.items():
            if label not in _KNOWN_LABELS:
                if not isinstance(label, str) or not is_valid_label(label):
                    raise SNetRuntimeError(f"cannot write a record with the label {label!r}: not a label in S-Net spelling")
                if len(_KNOWN_LABELS) < _KNOWN_LABELS_MAX:
                    _KNOWN_LABELS.add(label)
            if label[0] == "<":
                if type(value) is not int:
                    raise SNetRuntimeError(f"cannot write tag {label}: it holds a {type(value).__name__}, not an int")
                if label[1] == "#":
                    append(f'<btag label="{label[2:-1]}">{value}</btag>')
                else:
                    append(f'<tag label="{label[1:-1]}">{value}</tag>')
                continue
            try:
                text, c4snet = encode_field(value)
            except ValueError as exc:
                raise SNetRuntimeError(f"cannot write field '{label}': {exc}") from None
            if c4snet:
                append(f'<field label="{label}">{text}</field>')
            else:
                append(f'<field label="{label}" interface="snet-python">{text}</field>')
        append("</record>\n")
        return "".join(parts)
    except RecursionError:  # is_json_exact, the encoders and pickle all recurse
        raise too_deep_to_write(record) from None
    except ValueError:  # encode_field's are caught above: a tag too long to write in decimal
        raise long_tag_error(record) from None


_BINARY_OPEN: Final = '<record xmlns="snet-home.org" type="data" mode="binary" interface="C4SNet">'


def format_record_xml_binary(record: dict) -> str:
    """One data record as a line of S-Net XML with ``mode="binary"`` fields.

    A record with a field that has no binary form (see
    :func:`~snet.recordio.c4snet_binary.binary_field`) is written in the
    textual mode instead, whole, so that every record reads back the same.
    """
    textual = format_record_xml(record)  # checks every label and tag, and is the fallback
    parts = [_BINARY_OPEN]
    for label, value in record.items():
        if label[0] == "<":
            kind = "btag" if label[1] == "#" else "tag"
            parts.append(f'<{kind} label="{label.strip("<#>")}">{value}</{kind}>')
            continue
        text = binary_field(value)
        if text is None:
            return textual
        parts.append(f'<field label="{label}">{text}</field>')
    parts.append("</record>\n")
    return "".join(parts)


class XmlWriter(BatchWriter):
    """Writes records as S-Net XML, one record per line, ended by a terminate record."""

    EPILOGUE = _TERMINATE
    format_record = staticmethod(format_record_xml)

    # Exactly this line (interfaces.md §3): the reference distribution's
    # `compare` script skips it and nothing else.  Without an encoding in the
    # declaration the document is UTF-8, so a file in any other encoding gets
    # ASCII only, everything beyond it as character references.
    PROLOGUE = '<?xml version="1.0" ?>\n'

    def __init__(self, f: IO, owned: bool):
        encoding = getattr(f, "encoding", None)
        try:  # no encoding: an in-memory text stream, encoded (if ever) by its owner
            self._utf8 = not isinstance(encoding, str) or codecs.lookup(encoding).name in ("utf-8", "utf-8-sig")
        except LookupError:
            self._utf8 = False
        super().__init__(f, owned)

    def _drain(self) -> None:
        if not self._utf8 and self._pending:
            self._pending = [text if text.isascii() else _ascii(text) for text in self._pending]
        super()._drain()

    def _write_unencodable(self, text: str) -> None:
        self._f.write(_ascii(text))  # an encoding without even ASCII: let the file report it


def _ascii(text: str) -> str:
    """`text` in ASCII, with a character reference for every other character."""
    return text.encode("ascii", "xmlcharrefreplace").decode("ascii")


class XmlBinaryWriter(XmlWriter):
    """As :class:`XmlWriter`, with fields in the C4SNet binary form where they have one."""

    format_record = staticmethod(format_record_xml_binary)
