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
