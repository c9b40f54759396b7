"""Checked conversions of Python values to the C types of the library's calls: the one place that decides what
is refused, and how, so that no value is narrowed or wrapped on its way to C.

Python's conventions, as numpy and the struct module follow them:
- TypeError for a value of the wrong type (a float, a str or None where an int is wanted; a bool where a size,
  count, offset or dimension is wanted);
- OverflowError for a number outside the range of the C type it becomes (a grid of 2**32, a `uint32`
  kernel argument of -1 or 2**40, a `float32` argument of 1e300);
- gcap.InvalidValue for a size, count, offset or dimension below zero, which no C type of that kind holds.

`what` names the argument as the messages show it: "Context.alloc: nbytes", "Stream.launch: grid.x".
"""
import numbers
import operator
import struct

# The C types of the calls, by the names the messages use: (lowest, highest).
RANGES = {
    "int8": (-2 ** 7, 2 ** 7 - 1), "uint8": (0, 2 ** 8 - 1),
    "int16": (-2 ** 15, 2 ** 15 - 1), "uint16": (0, 2 ** 16 - 1),
    "int32": (-2 ** 31, 2 ** 31 - 1), "uint32": (0, 2 ** 32 - 1),
    "int64": (-2 ** 63, 2 ** 63 - 1), "uint64": (0, 2 ** 64 - 1),
    "int": (-2 ** 31, 2 ** 31 - 1), "unsigned": (0, 2 ** 32 - 1),
    "size_t": (0, 2 ** 64 - 1), "pointer": (0, 2 ** 64 - 1), "byte": (0, 2 ** 8 - 1),
}
RANGES["handle"] = RANGES["uint64"]

def _invalid(message):
    from ._objects import InvalidValue
    return InvalidValue(message, "GCAP_ERROR_INVALID_VALUE", 1)


def _shown(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def integer(value, what, ctype, bool_ok=False):
    """`value` as a Python int in the range of C type `ctype` (a key of RANGES). Raises TypeError for what is not an
    integer (operator.index refuses it; bool too unless `bool_ok`), OverflowError outside the range."""
    low, high = RANGES[ctype]
    if type(value) is int and low <= value <= high:  # the common case, checked first
        return value
    if isinstance(value, bool) and not bool_ok:
        raise TypeError("%s must be an int, not bool %r" % (what, value))
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an int, not %s %s" % (what, type(value).__name__, _shown(value))) from None
    if not low <= v <= high:
        raise OverflowError("%s is %d, outside the range of its C type %s (%d to %d)" % (what, v, ctype, low, high))
    return v


def size(value, what, ctype="size_t"):
    """A size, count, offset or dimension: an int from 0 (InvalidValue below), in the range of `ctype`
    (OverflowError above); TypeError for what is not an int, a bool among them."""
    if type(value) is int and 0 <= value <= RANGES[ctype][1]:
        return value
    if isinstance(value, bool):
        raise TypeError("%s must be an int, not bool %r" % (what, value))
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an int, not %s %s" % (what, type(value).__name__, _shown(value))) from None
    if v < 0:
        raise _invalid("%s is %d: it cannot be negative" % (what, v))
    return integer(v, what, ctype)


def flag(value, what):
    """A yes/no option: a bool (numpy's too), or the int 0 or 1; TypeError for anything else ("no" is not False)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):
        return bool(value)
    raise TypeError("%s must be True or False, not %s %s" % (what, type(value).__name__, _shown(value)))


def real(value, what, ctype):
    """`value` as a Python float for C type "float32" or "float64": TypeError for what is not a real number,
    OverflowError for a finite number beyond the type's range (infinities and NaN pass, as struct.pack's do)."""
    if not isinstance(value, numbers.Real):
        raise TypeError("%s must be a real number, not %s %s" % (what, type(value).__name__, _shown(value)))
    try:
        v = float(value)
    except OverflowError:
        raise OverflowError("%s is %s, outside the range of its C type %s" % (what, _shown(value), ctype)) from None
    if ctype == "float32":
        try:
            struct.pack("<f", v)  # refuses a finite value that rounds to infinity, as C's conversion would give
        except OverflowError:
            raise OverflowError("%s is %r, outside the range of its C type float32" % (what, v)) from None
    return v


def scalar(value, what, ctype):
    """A kernel argument of scalar type `ctype` ("int8" ... "uint64", "handle", "float32", "float64"), checked as
    integer or real does; a bool is taken as 0 or 1 by the integer types."""
    if ctype in ("float32", "float64"):
        return real(value, what, ctype)
    return integer(value, what, ctype, bool_ok=True)


def dims(value, what):
    """(x, y, z) of a grid or block: an int, or a sequence of one to three ints, each a uint32 size."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return (size(value, what + ".x", "uint32"), 1, 1)  # an int, or what is refused as one
    try:
        items = tuple(value)
    except TypeError:  # a 0-d array
        return (size(value, what + ".x", "uint32"), 1, 1)
    if not 1 <= len(items) <= 3:
        raise _invalid("%s has %d dimensions: a grid or block has 1 to 3" % (what, len(items)))
    items += (1,) * (3 - len(items))
    return tuple(size(v, "%s.%s" % (what, axis), "uint32") for v, axis in zip(items, "xyz"))


def within(offset, nbytes, limit, what):
    """Refuses (InvalidValue) `nbytes` at `offset` that do not fit `limit` bytes (offset and nbytes checked sizes)."""
    if offset + nbytes > limit:
        raise _invalid("%s: %d bytes at offset %d do not fit its %d bytes" % (what, nbytes, offset, limit))


def text(value, what):
    """A string C reads up to its NUL: `value` (str, or bytes) as bytes. TypeError for other types, InvalidValue for
    one holding a NUL, which C would cut it at."""
    if isinstance(value, str):
        data = value.encode()
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError("%s must be a str, not %s %s" % (what, type(value).__name__, _shown(value)))
    if b"\0" in data:
        raise _invalid("%s %s contains a NUL character, where C would cut it" % (what, _shown(value)))
    return data
