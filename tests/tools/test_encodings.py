"""The file tools read and edit legacy-encoded text and write it back as it was stored: the same
encoding, byte-order mark and line endings; truly binary files stay refused."""

from __future__ import annotations

from pathlib import Path

import pytest

LATIN1_SOURCE = "# -*- coding: latin-1 -*-\ndef greet():\n    return 'Grüße aus München, café au lait'\n"


def test_a_latin1_source_file_reads_as_text_and_names_its_encoding(call, project: Path):
    (project / "greet.py").write_bytes(LATIN1_SOURCE.encode("latin-1"))
    out = call("read_file", path="greet.py")
    assert not out.is_error, out.content
    assert "Grüße aus München, café au lait" in out.content and "Latin-1" in out.content
    assert "     3\t    return" in out.content
    paged = call("read_file", path="greet.py", offset=2, limit=1)
    assert "def greet" in paged.content and "Use offset=3" in paged.content


def test_editing_a_latin1_file_writes_latin1_back_and_leaves_the_other_bytes_alone(call, project: Path):
    path = project / "greet.py"
    path.write_bytes(LATIN1_SOURCE.encode("latin-1"))
    out = call("edit_file", path="greet.py", old_text="café au lait", new_text="crème brûlée")
    assert not out.is_error, out.content
    assert path.read_bytes() == LATIN1_SOURCE.replace("café au lait", "crème brûlée").encode("latin-1")


def test_cp1252_with_crlf_keeps_both(call, project: Path):
    path = project / "notes.txt"
    original = "Price: 5€\r\n“Quoted” text\r\nlast line\r\n"
    path.write_bytes(original.encode("cp1252"))
    out = call(
        "edit_file", path="notes.txt", old_text="“Quoted” text\nlast line", new_text="‘New’ text\nlast line – ok"
    )
    assert not out.is_error, out.content
    assert path.read_bytes() == "Price: 5€\r\n‘New’ text\r\nlast line – ok\r\n".encode("cp1252")
    assert "windows-1252" in call("read_file", path="notes.txt").content


@pytest.mark.parametrize(
    "encoding, text, old, new",
    [
        ("shift_jis", "# 日本語のコメント\nprint('こんにちは世界')\n", "こんにちは世界", "さようなら世界"),
        ("cp1251", "# Комментарий на русском языке\nprint('Привет, мир')\n", "Привет, мир", "Пока, мир"),
        ("gb18030", "# 中文注释：这是一个测试文件\nprint('你好')\n", "你好", "再见"),
    ],
)
def test_multibyte_and_cyrillic_files_are_edited_in_their_encoding(call, project: Path, encoding, text, old, new):
    path = project / "hello.py"
    path.write_bytes(text.encode(encoding))
    assert old in call("read_file", path="hello.py").content
    out = call("edit_file", path="hello.py", old_text=old, new_text=new)
    assert not out.is_error, out.content
    assert path.read_bytes() == text.replace(old, new).encode(encoding)


def test_utf16_with_a_bom_and_crlf_round_trips(call, project: Path):
    path = project / "report.txt"
    path.write_bytes("first line\r\nsecond line: wörld\r\n".encode("utf-16"))
    read = call("read_file", path="report.txt")
    assert not read.is_error and "second line: wörld" in read.content and "UTF-16 (with BOM)" in read.content
    assert call("grep", pattern="wörld").content == "report.txt:2: second line: wörld"
    out = call("edit_file", path="report.txt", old_text="wörld", new_text="world")
    assert not out.is_error, out.content
    assert path.read_bytes() == "first line\r\nsecond line: world\r\n".encode("utf-16")
    wrote = call("write_file", path="report.txt", content="replaced\nentirely\n")
    assert "kept its UTF-16 (with BOM), CRLF line endings" in wrote.content
    assert path.read_bytes() == "replaced\r\nentirely\r\n".encode("utf-16")


def test_utf8_with_a_bom_keeps_it(call, project: Path):
    path = project / "bom.cs"
    path.write_bytes(b"\xef\xbb\xbfclass A { }\n")
    assert call("edit_file", path="bom.cs", old_text="class A", new_text="class B").is_error is False
    assert path.read_bytes() == b"\xef\xbb\xbfclass B { }\n"


def test_write_file_keeps_the_encoding_and_refuses_what_it_cannot_hold(call, project: Path):
    path = project / "greet.py"
    path.write_bytes(LATIN1_SOURCE.encode("latin-1"))
    wrote = call("write_file", path="greet.py", content="# -*- coding: latin-1 -*-\nNAME = 'Zoë'\n")
    assert not wrote.is_error and "kept its Latin-1" in wrote.content
    assert path.read_bytes() == "# -*- coding: latin-1 -*-\nNAME = 'Zoë'\n".encode("latin-1")
    before = path.read_bytes()
    refused = call("write_file", path="greet.py", content="NAME = 'Zoë 🎉'\n")
    assert (
        refused.is_error and "Latin-1" in refused.content and "'🎉'" in refused.content and "line 1" in refused.content
    )
    refused_edit = call("edit_file", path="greet.py", old_text="Zoë", new_text="Zoë 🎉")
    assert refused_edit.is_error and "cannot hold" in refused_edit.content
    assert path.read_bytes() == before
    assert call("write_file", path="fresh.txt", content="Zoë 🎉\n").is_error is False
    assert (project / "fresh.txt").read_bytes() == "Zoë 🎉\n".encode()


def test_grep_finds_text_in_a_legacy_file(call, project: Path):
    (project / "greet.py").write_bytes(LATIN1_SOURCE.encode("latin-1"))
    assert call("grep", pattern="München").content == "greet.py:3:     return 'Grüße aus München, café au lait'"


def test_truly_binary_files_stay_refused_with_a_clear_message(call, project: Path):
    (project / "blob.bin").write_bytes(b"\x00\x01\x02\x03binary\xff\xfe\x00" * 200)
    for tool, args in (("read_file", {}), ("edit_file", {"old_text": "binary", "new_text": "x"})):
        out = call(tool, path="blob.bin", **args)
        assert out.is_error and "is a binary file" in out.content and "xxd" in out.content
