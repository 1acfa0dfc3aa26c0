"""Where the tests find the collprof sources' sample files.

COLLPROF_SRCDIR (set by `make check`) is the top of the collprof sources;
without it, this file's place in them is used (contrib/python/tests)."""

import functools
import glob
import os

import pytest

import collprof

SRCDIR = os.environ.get("COLLPROF_SRCDIR") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
DATA = os.path.join(SRCDIR, "tests", "data")
SAMPLES = sorted(glob.glob(os.path.join(DATA, "collprof-*.h5")))


def pytest_generate_tests(metafunc):
    if "sample" in metafunc.fixturenames:
        metafunc.parametrize("sample", SAMPLES,
                             ids=[os.path.basename(p) for p in SAMPLES])


@pytest.fixture(scope="session")
def srcdir():
    return SRCDIR


@functools.lru_cache(maxsize=None)
def report(path):
    """collprof.open(path), read once for every test (none changes it)."""
    return collprof.open(path)
