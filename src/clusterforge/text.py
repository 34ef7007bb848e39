"""Text from hosts and tasks made safe to print and to put in XML."""

from __future__ import annotations

import re

# CSI (colours, cursor moves), OSC (titles, links) and other ESC sequences.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# Control characters but tab and newline (a stray \r or \b rewrites what a terminal shows).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# What XML 1.0 forbids beyond the control characters: lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def plain(text: str) -> str:
    """Without escape sequences or control characters; \r\n becomes \n."""
    return _CONTROL.sub("", _ANSI.sub("", text.replace("\r\n", "\n")))


def xml_safe(text: str) -> str:
    """What an XML 1.0 document can hold."""
    return _NOT_XML.sub("\ufffd", plain(text))
