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
  lexical filter (``DeclarationFilter``) removes every ``<?xml ...?>`` before
  the text reaches expat, keeping the line breaks inside it so that expat's
  line numbers stay those of the file.  The filter knows comments, CDATA
  sections and processing instructions, the only places where ``<?xml`` can
  occur without being markup; everywhere else ``<`` starts markup.
* Bytes are decoded here, not by expat, with the encoding named by the first
  declaration (UTF-8 by default); the encodings later declarations name are
  ignored, since one stream has one encoding.
* The handlers build one record at a time and queue it; the reader yields
  the queued records after each chunk, so records before a malformed one are
  delivered before its error.  A terminate record stops the reader at once:
  its handler raises, expat stops mid-chunk, and nothing after it is read.

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
from snet.recordio.streams import BatchWriter, RecordFileError, read_chunk_function
from snet.recordio.values import ValueFormError

CHUNK_SIZE: Final = 1 << 16

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


class DeclarationFilter:
    """Removes XML declarations from text fed in arbitrary chunks.

    Invariant: ``_carry`` is a suffix of the input that may begin a
    construct (comment, CDATA section, processing instruction) whose end has
    not arrived yet; it is never passed on before it is complete.
    """

    __slots__ = ("_carry",)

    def __init__(self) -> None:
        self._carry = ""

    def feed(self, text: str, final: bool = False) -> str:
        """The text to pass on, given the next chunk `text`."""
        buf = self._carry + text if self._carry else text
        self._carry = ""
        out = []
        pos = 0
        search = _MARKUP.search
        while True:
            m = search(buf, pos)
            if m is None:
                break
            start = m.start()
            token = m.group()
            close = _MARKUP_END[token]
            end = buf.find(close, m.end())
            if end < 0:
                if final:  # unterminated: let expat report it
                    break
                out.append(buf[pos:start])
                self._carry = buf[start:]
                return "".join(out)
            end += len(close)
            if token == "<?" and buf.startswith("<?xml", start) and buf[start + 5: start + 6] in _AFTER_XML:
                out.append(buf[pos:start])
                out.append("\n" * buf.count("\n", start, end))
            else:
                out.append(buf[pos:end])
            pos = end
        if not final:
            # A chunk may end inside the opening of a construct ("<!-", "<![CD").
            lt = buf.rfind("<", max(pos, len(buf) - 8))
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
        self.valid_names: set[str] = set()

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
            if self.item_label[0] != "<":
                try:
                    value = decode_field(text, self.allow_pickle)
                except ValueFormError as exc:
                    raise self.error(self.item_line, f"field '{self.item_name}': {exc}") from None
            elif _INT_TEXT.match(text):
                value = int(text)
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
            return int(stripped)
        shown = stripped if len(stripped) <= 40 else stripped[:37] + "..."
        kind = self.item_kind.rpartition(":")[2]
        raise self.error(self.item_line, f"{kind} '{self.item_name}' must hold an integer, not '{shown}'")

    def characters(self, data: str) -> None:
        if self.depth == 2:
            self.text += data
        elif not data.isspace():
            self._stray_text(data)

    def _stray_text(self, data: str) -> None:
        where = "between the elements of a record" if self.depth == 1 else "outside a record"
        text = data.strip()
        shown = text.split("\n", 1)[0]
        shown = shown if len(shown) <= 30 and shown == text else shown[:27] + "..."
        hint = " (is this JSON Lines? give --format jsonl)" if text.startswith("{") else ""
        # Buffered text arrives when the markup after it is reached: count
        # back to the line of its first non-blank character.
        leading = data[: len(data) - len(data.lstrip())]
        line = self.parser.CurrentLineNumber - data.count("\n") + leading.count("\n")
        raise self.error(max(line, 1), f"unexpected text {where}: '{shown}'{hint}")


_DECL_ENCODING = re.compile(rb"""^<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""")


def _sniff_encoding(head: bytes) -> tuple[str, bool]:
    """(codec name, whether a BOM must be skipped) for a file starting with `head`."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig", True
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16", True
    m = _DECL_ENCODING.match(head)
    return (m.group(1).decode("ascii") if m else "utf-8"), False


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
        encoding, _ = _sniff_encoding(head)
        try:
            decoder = codecs.getincrementaldecoder(encoding)("strict")
        except LookupError:
            raise RecordFileError(name, 1, f"unknown encoding '{encoding}' in the XML declaration") from None
    elif first.startswith("\ufeff"):  # a byte-order mark left in by a text-mode caller
        first = first[1:]

    parser = expat.ParserCreate()
    parser.buffer_text = True
    builder = _RecordBuilder(parser, name, allow_pickle)
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.characters
    declarations = DeclarationFilter()
    lines_fed = 1  # for decoding errors, which expat never sees
    parse = parser.Parse

    def feed(text: str, final: bool = False) -> BaseException | None:
        """Parse `text`; return the error or _Terminated that stopped it, if any."""
        try:
            parse(text, final)
        except (RecordFileError, _Terminated) as exc:
            return exc
        except expat.ExpatError as exc:
            column = exc.offset + 1 - (len(_ROOT_OPEN) if exc.lineno == 1 else 0)
            return RecordFileError(name, exc.lineno, f"invalid XML: {expat.ErrorString(exc.code)} (column {column})")
        return None

    stop = feed(_ROOT_OPEN)
    chunk = first
    try:
        while chunk:
            if decoder is not None:
                try:
                    text = decoder.decode(chunk)
                except UnicodeDecodeError as exc:
                    line = lines_fed + chunk[: exc.start].count(b"\n")
                    raise RecordFileError(name, line, f"cannot decode the input as {exc.encoding}: {exc.reason}") from None
            else:
                text = chunk
            text = declarations.feed(text)
            lines_fed += text.count("\n")
            stop = feed(text)
            ready = builder.ready
            while ready:
                yield ready.popleft()
            if stop is not None:
                break
            chunk = read()
        else:
            if decoder is not None:
                try:
                    tail = decoder.decode(b"", True)
                except UnicodeDecodeError as exc:
                    raise RecordFileError(name, lines_fed, f"the input ends inside a character ({exc.reason})") from None
            else:
                tail = ""
            stop = feed(declarations.feed(tail, final=True))
            if stop is None:
                if builder.depth >= 1:
                    stop = RecordFileError(name, builder.record_line,
                                           "the input ends inside this <record> (no </record>)")
                else:
                    stop = feed(f"</{_ROOT}>", True)
            ready = builder.ready
            while ready:
                yield ready.popleft()
        if isinstance(stop, RecordFileError):
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


class XmlWriter(BatchWriter):
    """Writes records as S-Net XML, one record per line, ended by a terminate record."""

    EPILOGUE = _TERMINATE
    format_record = staticmethod(format_record_xml)

    def __init__(self, f: IO, owned: bool):
        encoding = getattr(f, "encoding", None)
        declared = f' encoding="{encoding.upper()}"' if isinstance(encoding, str) else ""
        self.PROLOGUE = f'<?xml version="1.0"{declared}?>\n'
        super().__init__(f, owned)

    def _write_unencodable(self, text: str) -> None:
        # Character references carry any character in any encoding.
        encoding = getattr(self._f, "encoding", None) or "ascii"
        self._f.write(text.encode(encoding, "xmlcharrefreplace").decode(encoding))
