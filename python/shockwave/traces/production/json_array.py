"""Streaming a file that holds one JSON array: its elements one at a time, in bounded memory.

``json.load`` would hold the whole document (Philly's job log is hundreds of megabytes of
objects). Here the file is read in chunks and each element decoded on its own
(``JSONDecoder.raw_decode``), so memory holds one chunk and one element at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from shockwave.errors import TraceError

#: Characters read at a time.
CHUNK_CHARS = 1 << 20
#: Largest element (characters) decoded; a longer one is reported as malformed rather than read
#: on without end.
MAX_ELEMENT_CHARS = 64 << 20

_WHITESPACE = " \t\n\r"
#: Characters before the end of the text within which a decoding error may be a cut element
#: (a literal, a number or an escape cut short is shorter).
_CUT_MARGIN = 64
_NUMBER_CHARACTERS = frozenset("0123456789+-.eE")


class _Buffer:
    """The unread part of the file: ``text[position:]`` plus what the file still holds."""

    def __init__(self, handle: TextIO, path: Path) -> None:
        self.handle = handle
        self.path = path
        self.text = ""
        self.position = 0
        self.at_end = False

    def more(self) -> bool:
        """Read another chunk; ``False`` at the end of the file."""
        if self.at_end:
            return False
        try:
            chunk = self.handle.read(CHUNK_CHARS)
        except UnicodeDecodeError:
            raise TraceError("not UTF-8 text", path=self.path) from None
        except OSError as exc:
            raise TraceError(f"cannot read ({exc.strerror})", path=self.path) from None
        if not chunk:
            self.at_end = True
            return False
        self.text = self.text[self.position :] + chunk
        self.position = 0
        return True

    def next_character(self) -> str:
        """The next character that is not white space ("" at the end), not consumed."""
        while True:
            while self.position < len(self.text) and self.text[self.position] in _WHITESPACE:
                self.position += 1
            if self.position < len(self.text):
                return self.text[self.position]
            if not self.more():
                return ""


def json_array_elements(path: Path) -> Iterator[tuple[int, Any]]:
    """``(index, element)`` of every element of the JSON array in ``path``, streamed.

    Raises:
        TraceError: naming the file and the element index for a file that is not one JSON array,
            an element that is not valid JSON, or text after the array.
    """
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise TraceError(f"cannot read ({exc.strerror})", path=path) from None
    decoder = json.JSONDecoder()
    with handle:
        buffer = _Buffer(handle, path)
        if buffer.next_character() != "[":
            raise TraceError("must hold one JSON array of jobs ('[' expected)", path=path)
        buffer.position += 1
        index = 0
        if buffer.next_character() == "]":
            buffer.position += 1
        else:
            while True:
                yield index, _decode_element(decoder, buffer, index)
                after = buffer.next_character()
                buffer.position += 1
                if after == "]":
                    break
                if after != ",":
                    found = repr(after) if after else "the end of the file"
                    raise TraceError(
                        f"',' or ']' expected after the element, found {found}",
                        path=path, element=index,
                    )  # fmt: skip
                index += 1
        if buffer.next_character() != "":
            raise TraceError("text after the JSON array", path=path)


def _decode_element(decoder: json.JSONDecoder, buffer: _Buffer, index: int) -> Any:
    if buffer.next_character() == "":
        raise TraceError("the array ends without ']'", path=buffer.path, element=index)
    while True:
        try:
            value, end = decoder.raw_decode(buffer.text, buffer.position)
        except json.JSONDecodeError as exc:
            # maybe the element goes on in the next chunk: read more and retry, within bounds
            # (an error well before the end of what is read cannot be a cut, unless it is a
            # string that a later chunk closes)
            cut = exc.pos >= len(buffer.text) - _CUT_MARGIN or exc.msg.startswith("Unterminated")
            if cut and len(buffer.text) - buffer.position < MAX_ELEMENT_CHARS and buffer.more():
                continue
            raise TraceError(
                f"not valid JSON ({exc.msg})", path=buffer.path, element=index
            ) from None
        except RecursionError:
            raise TraceError("JSON nested too deeply", path=buffer.path, element=index) from None
        if not isinstance(value, (dict, list, str)):
            # a number or literal decoded up to the chunk's end (or up to a character that only
            # a longer number could hold: "-0." of "-0.5") may go on in the next chunk
            tail = end
            while tail < len(buffer.text) and buffer.text[tail] in _NUMBER_CHARACTERS:
                tail += 1
            if tail == len(buffer.text) and buffer.more():
                continue
        buffer.position = end
        return value
