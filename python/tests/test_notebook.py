"""examples/python/explore.ipynb runs from top to bottom (nbclient), so it cannot rot."""
import os

import pytest

NOTEBOOK = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "explore.ipynb")


def test_the_notebook_runs(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    if not os.path.exists(NOTEBOOK):
        pytest.skip("the notebook is not in this tree")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED" in text
    assert "of 20 shuffled launches computed the wrong result" in text
    assert "TOPOLOGY_CHANGED" in text


def test_the_notebook_is_committed_with_its_outputs():
    """Browsing the repository shows the pictures: every code cell ran, and graphs are drawn."""
    import json
    if not os.path.exists(NOTEBOOK):
        pytest.skip("the notebook is not in this tree")
    with open(NOTEBOOK) as f:
        cells = [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]
    assert cells and all(c.get("execution_count") for c in cells), "re-run it: tools/run-notebook.sh"
    pictures = [o for c in cells for o in c["outputs"] if "image/svg+xml" in o.get("data", {})]
    assert len(pictures) >= 3, "re-run it: tools/run-notebook.sh"
