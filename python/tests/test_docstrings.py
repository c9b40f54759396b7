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


def _own_doc(obj):
    """The object's own docstring: a class does not inherit its base's (inspect.getdoc would give it)."""
    return (obj.__dict__.get("__doc__") if inspect.isclass(obj) else inspect.getdoc(obj)) or ""


def public_items():
    """(name, object) of gcap.__all__, then of every other public class the package's modules define (the
    objects a kernel, a plugin fixture or a notebook hands out: Block, GcapCase, Trace, ...)."""
    import gcap._arrays
    import gcap._graphs
    import gcap._kernels
    import gcap._objects
    import gcap._pictures
    import gcap.pytest_plugin
    items = [(name, getattr(gcap, name)) for name in gcap.__all__]
    seen = {id(obj) for _, obj in items}
    for module in (gcap._objects, gcap._graphs, gcap._kernels, gcap._arrays, gcap._pictures, gcap.pytest_plugin):
        for name, obj in sorted(vars(module).items()):
            if inspect.isclass(obj) and not name.startswith("_") and obj.__module__ == module.__name__ and \
                    id(obj) not in seen:
                seen.add(id(obj))
                items.append((name, obj))
    return items


def undocumented(items=None):
    missing = []
    for name, obj in items if items is not None else public_items():
        if not _own_doc(obj).strip():
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


def test_the_check_finds_a_class_without_its_own_docstring():
    class Documented:
        """A base with a docstring."""

    class Bare(Documented):
        pass

    assert undocumented([("Bare", Bare), ("Documented", Documented)]) == ["Bare"]
