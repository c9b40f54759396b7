"""The package under test is the installed one (pip install .), or the tree's with GCAP_LIBRARY set."""
import gc

import pytest

import gcap


@pytest.fixture
def ctx():
    c = gcap.Context(backend="sim")
    yield c
    c.close()
    gc.collect()
