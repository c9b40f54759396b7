"""help(gcap.Context) is enough to start: every public class, function, method and property says what it
does, what it returns and what it raises."""
import inspect

import gcap


def _public_members(cls):
    for name, value in vars(cls).items():
        if name.startswith("_") and name not in ("__init__", "__enter__", "__exit__"):
            continue
        if name in ("__init__", "__enter__", "__exit__"):
            continue  # the class's docstring covers construction and the with block
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            yield name, value


def undocumented():
    missing = []
    for name in gcap.__all__:
        obj = getattr(gcap, name)
        if not (inspect.getdoc(obj) or "").strip():
            missing.append(name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for member, value in _public_members(obj):
                doc = value.__doc__ if not isinstance(value, property) else (value.fget.__doc__ or value.__doc__)
                if not (doc or "").strip():
                    missing.append("%s.%s" % (name, member))
    return missing


def test_every_public_item_has_a_docstring():
    assert undocumented() == []


def test_the_check_finds_a_missing_docstring(monkeypatch):
    def bare(self):
        pass

    monkeypatch.setattr(gcap.Stream, "bare", bare, raising=False)
    assert "Stream.bare" in undocumented()
