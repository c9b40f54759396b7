"""The Python blocks of docs/python.md and the README run as written."""
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def blocks(path):
    with open(path) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


@pytest.mark.parametrize("doc", ["docs/python.md", "README.md"])
def test_python_blocks_run(doc, tmp_path, monkeypatch):
    path = os.path.join(ROOT, doc)
    if not os.path.exists(path):
        pytest.skip("%s is not in this tree" % doc)
    monkeypatch.chdir(tmp_path)
    for code in blocks(path):
        if "pytest.mark.gcap" in code:
            continue  # a test for the plugin: test_plugin.py runs it under pytest
        exec(compile(code, doc, "exec"), {"__name__": "__doc__"})


PRINT_WITH_COMMENT = re.compile(r"^\s*print\(.*\)\s+# (.*)$")


def printed_per_comments(code):
    """What a block says it prints: the comments of its print lines, in order (None when a print has none)."""
    lines = [line for line in code.splitlines() if line.lstrip().startswith("print(")]
    return [m.group(1) if m else None for m in map(PRINT_WITH_COMMENT.match, lines)]


def test_the_readme_python_block_prints_exactly_what_its_comments_say(tmp_path, monkeypatch, capsys):
    path = os.path.join(ROOT, "README.md")
    if not os.path.exists(path):
        pytest.skip("README.md is not in this tree")
    (code,) = blocks(path)
    expected = printed_per_comments(code)
    assert expected and None not in expected, "every print of the README's block says what it prints"
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    exec(compile(code, "README.md", "exec"), {"__name__": "__doc__"})
    assert capsys.readouterr().out.splitlines() == expected


def test_the_comment_check_reads_print_lines():
    assert printed_per_comments("x = 1\nprint(x)   # 1\nprint(2)\n  print('#')  # #\n") == ["1", None, "#"]
