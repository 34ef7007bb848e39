from __future__ import annotations

import xml.etree.ElementTree as ET

from clusterforge.text import plain, xml_safe


def test_plain_drops_escape_sequences_and_control_characters():
    assert plain("\x1b[31mred\x1b[0m \x1b]0;title\x07ok\r\nnext\x00\x08") == "red ok\nnext"


def test_xml_safe_text_survives_an_xml_round_trip():
    hostile = "fatal \x1b[1mbold\x1b[0m \x01\x0b\ufffe\udc80 <&> [/x]"
    element = ET.Element("failure", message=xml_safe(hostile))
    element.text = xml_safe(hostile)
    parsed = ET.fromstring(ET.tostring(element, encoding="unicode"))
    assert parsed.text == parsed.get("message") == "fatal bold \ufffd\ufffd <&> [/x]"
