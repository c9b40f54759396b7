"""The package that `pip install .` makes holds every module of python/gcap: meson installs only the files
python/meson.build lists, and a module missing there fails only the installed package's import."""
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "gcap"
MESON = PACKAGE.parent / "meson.build"


def test_every_module_is_installed():
    listed = set(re.findall(r"'gcap/([\w.]+\.py)'", MESON.read_text()))
    present = {p.name for p in PACKAGE.glob("*.py")}
    assert present - listed == set(), "python/meson.build does not install %s" % sorted(present - listed)
    assert listed - present == set(), "python/meson.build installs missing files %s" % sorted(listed - present)
