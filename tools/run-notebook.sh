#!/bin/sh
# Runs examples/python/explore.ipynb from top to bottom and saves it with its outputs, so that the
# repository shows its pictures. Needs a Python with gcap and the [notebook] extra installed:
#   tools/run-notebook.sh [python]     (default: v/bin/python, the README's virtual environment)
cd "$(dirname "$0")/.." || exit 1
python=${1:-v/bin/python}
"$python" - examples/python/explore.ipynb <<'PY'
import sys
import nbclient
import nbformat
path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
nbformat.write(nb, path)
print("ran and saved", path)
PY
