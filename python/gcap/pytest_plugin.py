"""pytest plugin: run capture code on the simulator under many seeds, capture modes and execution modes.

pytest loads it by itself where gcap is installed (entry point pytest11); from a source tree, load it with
`-p gcap.pytest_plugin` (not both: pytest refuses a plugin registered under two names).

    @pytest.mark.gcap(seeds=8, capture_modes=["global", "relaxed"])
    def test_my_graph(gcap_ctx, gcap_capture_mode):
        s = gcap_ctx.stream()
        with s.capture(mode=gcap_capture_mode) as cap:
            ...

A marked test runs once per seed (1..seeds) and capture mode, each case on a fresh simulator context
(by default exec="deferred", order="shuffle": streams run in a seed-dependent order, and work runs only
when the host waits for it). `--gcap-seeds=N` widens every marked test to N seeds, `--gcap-seed=S`
runs only seed S. A failing case's report names its seed, options and mode, the command that re-runs
exactly that case, and the C message of a gcap error.
"""
import gc
import shlex
import sys

import pytest

MARKER_HELP = ("gcap(seeds=1, exec='deferred', order='shuffle', strict_memory=False, check_races=False, threads=0, "
               "kernels='auto', checks=None, capture_modes=None): run the test once per seed 1..seeds (and per "
               "capture mode) on a fresh simulator context, given by the gcap_ctx fixture; gcap_capture_mode "
               "gives the case's mode")
SIM_OPTIONS = ("exec", "order", "strict_memory", "check_races", "threads", "kernels", "checks")
MARKER_DEFAULTS = {"exec": "deferred", "order": "shuffle"}
CAPTURE_MODES = ("global", "thread_local", "relaxed")


class GcapCase:
    """One case of a marked test: `seed`, capture `mode` and `options`, the simulator's keywords (seed included)."""

    def __init__(self, seed=None, mode="global", options=None):
        self.seed, self.mode = seed, mode
        self.options = dict(options or {})
        if seed is not None:
            self.options["seed"] = seed

    @property
    def id(self):
        """The case's test id: `seed=3-mode=relaxed`."""
        return "seed=%s-mode=%s" % (self.seed, self.mode)

    def describe(self):
        """`seed=3 exec=deferred order=shuffle mode=relaxed`: every option that makes the case."""
        words = ["seed=%s" % self.seed]
        words += ["%s=%s" % (k, v) for k, v in sorted(self.options.items()) if k != "seed"]
        return " ".join(words + ["mode=%s" % self.mode])

    def __repr__(self):
        return "<GcapCase %s>" % self.describe()


# ------------------------------------------------------------------ configuration


def _positive(text):
    """The value of --gcap-seeds or --gcap-seed: a number from 1."""
    value = int(text)
    if value < 1:
        raise ValueError("%r is not a positive number" % text)
    return value


def pytest_addoption(parser):
    """Adds --gcap-seeds and --gcap-seed."""
    group = parser.getgroup("gcap", "gcap capture-safety cases")
    group.addoption("--gcap-seeds", type=_positive, default=None, metavar="N",
                    help="run every @pytest.mark.gcap test with seeds 1..N (at least; a marker may ask for more)")
    group.addoption("--gcap-seed", type=_positive, default=None, metavar="S",
                    help="run every @pytest.mark.gcap test with seed S only (to re-run one failing case)")


def pytest_configure(config):
    """Registers the gcap marker."""
    config.addinivalue_line("markers", MARKER_HELP)


# ------------------------------------------------------------------ cases


def _marker_options(marker):
    """(seeds, capture modes or None, simulator options) of a gcap marker; a bad one fails collection, as a bad
    parametrize does."""
    if marker.args:
        _bad_marker("takes keyword arguments only, not %r" % (marker.args,))
    kwargs = dict(marker.kwargs)
    seeds = kwargs.pop("seeds", 1)
    modes = kwargs.pop("capture_modes", None)
    unknown = sorted(set(kwargs) - set(SIM_OPTIONS))
    if unknown:
        _bad_marker("unknown argument(s) %s; known: seeds, capture_modes, %s"
                    % (", ".join(unknown), ", ".join(SIM_OPTIONS)))
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
        _bad_marker("seeds=%r is not a positive number" % (seeds,))
    if modes is not None and (isinstance(modes, str) or not set(modes) <= set(CAPTURE_MODES) or not modes):
        _bad_marker("capture_modes=%r is not a list of %s" % (modes, ", ".join(CAPTURE_MODES)))
    return seeds, modes, dict(MARKER_DEFAULTS, **kwargs)


def _bad_marker(message):
    """Fails the collection of a badly marked test with message alone (no traceback into the plugin)."""
    pytest.fail("@pytest.mark.gcap: " + message, pytrace=False)


def _seeds(config, marked):
    """The seeds to run: --gcap-seed alone, else 1..max(marker's seeds, --gcap-seeds)."""
    only = config.getoption("gcap_seed")
    if only is not None:
        return [only]
    return list(range(1, max(marked, config.getoption("gcap_seeds") or 1) + 1))


def cases_of(config, marker):
    """The GcapCases of a test with this gcap marker, seed after seed, each in every capture mode."""
    seeds, modes, options = _marker_options(marker)
    return [GcapCase(seed, mode, options) for seed in _seeds(config, seeds) for mode in (modes or ["global"])]


def pytest_generate_tests(metafunc):
    """Parametrizes each test marked gcap with its cases (through the gcap_case fixture, ids `seed=N-mode=M`)."""
    marker = metafunc.definition.get_closest_marker("gcap")
    if marker is None:
        return
    cases = cases_of(metafunc.config, marker)
    if "gcap_case" not in metafunc.fixturenames:
        metafunc.fixturenames.append("gcap_case")  # a marked test that asks for no gcap fixture runs per case too
    metafunc.parametrize("gcap_case", cases, ids=[case.id for case in cases], indirect=True)


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def gcap_case(request):
    """The current case (a GcapCase): its seed, capture mode and simulator options; for an unmarked test,
    seed None, mode "global" and no options (the simulator's defaults, or its GCAP_SIM_* variables)."""
    return getattr(request, "param", None) or GcapCase()


@pytest.fixture
def gcap_capture_mode(gcap_case):
    """The capture mode of the current case ("global" unless the marker's capture_modes say otherwise)."""
    return gcap_case.mode


@pytest.fixture
def gcap_ctx(gcap_case):
    """A fresh simulator gcap.Context made with the current case's options; closed after the test."""
    import gcap
    ctx = gcap.Context(backend="sim", **gcap_case.options)
    yield ctx
    ctx.close()
    gc.collect()


# ------------------------------------------------------------------ reports


def gcap_error_of(exc):
    """The first gcap.Error in exc and the exceptions it was raised from or during, or None."""
    gcap = sys.modules.get("gcap")
    seen = set()
    while exc is not None and id(exc) not in seen and gcap is not None:
        if isinstance(exc, gcap.Error):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def failure_text(item, case, excinfo):
    """What a failing case's report says: the case, the command re-running it, and a gcap error's message."""
    command = "pytest %s --gcap-seed=%s" % (shlex.quote(item.nodeid), case.seed)
    text = "gcap: failed with %s; re-run exactly this case with: %s" % (case.describe(), command)
    error = gcap_error_of(excinfo.value if excinfo is not None else None)
    if error is not None:
        text += "\ngcap.%s (%s): %s" % (type(error).__name__, error.status, error)
    return text


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Adds a "gcap" section to the report of a failing marked case (setup, call or teardown)."""
    outcome = yield
    report = outcome.get_result()
    case = getattr(getattr(item, "callspec", None), "params", {}).get("gcap_case")
    if not report.failed or not isinstance(case, GcapCase):
        return
    text = failure_text(item, case, call.excinfo)
    if hasattr(report.longrepr, "addsection"):
        report.longrepr.addsection("gcap", text)
    else:
        report.sections.append(("gcap", text))
