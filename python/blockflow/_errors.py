"""blockflow.Error and its subclasses, one per bf_status, and the Problem record of a page.

Every failure of the library becomes one exception carrying what struct bf_error says: the
status, a stable machine `code`, the `block`, `port` and `attr` concerned, a JSON `pointer` into
the page, `line`/`column` for JSON syntax errors, the one-sentence `message`, and `problems`:
every problem the library reported at once (a page with three bad blocks gives three).

Subclasses also derive from the built-in exception a Python programmer would catch for the same
thing (ValueError for bad attributes and shapes, TypeError for dtypes, LookupError for unknown
names, MemoryError), so `except ValueError` keeps working around blockflow calls.
"""
from __future__ import annotations

import ctypes
from typing import NamedTuple

from ._lib import BfError, lib, new, text


class Problem(NamedTuple):
    """One record of a page's diagnostics (errors and warnings alike)."""
    severity: str      # "error" or "warning"
    status: str        # "EATTR", ... ("OK" for a warning)
    code: str          # stable machine code: "bad_attr", "missing_input", ...
    block: str         # block id, or ""
    port: str          # port name, or ""
    attr: str          # attribute name, or ""
    message: str       # one sentence
    pointer: str = ""  # RFC 6901 pointer into the page
    line: int = 0      # 1-based, JSON syntax errors only
    column: int = 0
    text: str = ""     # the line the CLI prints for it

    def __str__(self):
        return self.text or self.message


class Error(Exception):
    """Base class of every error the blockflow library reports."""
    status = "EINTERNAL"

    def __init__(self, message, *, code="", block="", port="", attr="", pointer="", line=0,
                 column=0, page="", problems=(), text=None):
        super().__init__(text or message)
        self.message = message
        self.code = code
        self.block = block
        self.port = port
        self.attr = attr
        self.pointer = pointer
        self.line = line
        self.column = column
        self.page = page
        self.problems = list(problems)


class OutOfMemoryError(Error, MemoryError):
    status = "ENOMEM"


class ParseError(Error, ValueError):
    status = "EPARSE"


class SchemaError(Error, ValueError):
    status = "ESCHEMA"


class AttrError(Error, ValueError):
    status = "EATTR"


class ShapeError(Error, ValueError):
    status = "ESHAPE"


class DtypeError(Error, TypeError):
    status = "EDTYPE"


class LimitError(Error):
    status = "ELIMIT"


class DeviceError(Error):
    status = "EDEVICE"


class UnsupportedError(Error):
    status = "EUNSUPPORTED"


class IoError(Error):
    """BF_EIO: a file could not be read or written (the message carries the system's reason)."""
    status = "EIO"


class CancelledError(Error):
    status = "ECANCELED"


class TimedOutError(Error):
    """BF_ETIMEDOUT: the run took longer than its `timeout`."""
    status = "ETIMEDOUT"


class InvalidArgumentError(Error, ValueError):
    status = "EINVAL"


class NotFoundError(Error, LookupError):
    status = "ENOTFOUND"


class InternalError(Error):
    status = "EINTERNAL"


_BY_STATUS = {cls.status: cls for cls in (
    OutOfMemoryError, ParseError, SchemaError, AttrError, ShapeError, DtypeError, LimitError,
    DeviceError, UnsupportedError, IoError, CancelledError, TimedOutError, InvalidArgumentError,
    NotFoundError, InternalError)}


def error_codes():
    """The stable error codes of blockflow (BF_ERROR_CODE_MAP), code -> meaning, in the
    library's order: every `Error.code` and `Problem.code` is one of them."""
    names = ctypes.POINTER(ctypes.c_char_p)()
    n = lib.bf_error_codes(ctypes.byref(names))
    return {text(names[i]): text(lib.bf_error_code_meaning(names[i])) for i in range(n)}


def _format(e):
    buf = ctypes.create_string_buffer(1024)
    lib.bf_error_format(ctypes.byref(e), buf, len(buf))
    return text(buf.value)


def problem_from(e):
    """A Problem from a struct bf_error."""
    return Problem(severity="error" if e.status else "warning",
                   status=text(lib.bf_status_name(e.status)), code=text(e.code),
                   block=text(e.block_id), port=text(e.port), attr=text(e.attr),
                   message=text(e.message), pointer=text(e.pointer), line=e.line,
                   column=e.column, text=_format(e))


# bf_status by name ("EATTR" -> -4), read from the library rather than copied from the header.
_STATUS_VALUE = {text(lib.bf_status_name(v)): v for v in range(-64, 1)}
_STATUS_VALUE.pop("UNKNOWN", None)


def problem_from_json(d, page=""):
    """A Problem from one record of bf_session_check_json's "problems" (with the page's file
    name, which the JSON leaves out, so that .text is the line the CLI prints)."""
    e = BfError()
    e.status = _STATUS_VALUE.get(d.get("status"), -15) if d.get("severity") != "warning" else 0
    for field, key in (("code", "code"), ("page", None), ("block_id", "block"), ("port", "port"),
                       ("attr", "attr"), ("pointer", "pointer"), ("message", "message")):
        value = page if key is None else d.get(key) or ""
        size = getattr(BfError, field).size
        setattr(e, field, value.encode("utf-8")[:size - 1])
    return problem_from(e)


def diags_list(diags):
    """Every record of a bf_diags list, as Problems."""
    return [problem_from(lib.bf_diags_at(diags, i).contents)
            for i in range(lib.bf_diags_count(diags))]


def error_from(e, diags=None):
    """The exception for a filled struct bf_error (and the diagnostics gathered with it)."""
    problems = diags_list(diags) if diags else []
    errors = [p for p in problems if p.severity == "error"]
    if not errors:
        problems.append(problem_from(e))
    cls = _BY_STATUS.get(text(lib.bf_status_name(e.status)), InternalError)
    return cls(text(e.message), code=text(e.code), block=text(e.block_id), port=text(e.port),
               attr=text(e.attr), pointer=text(e.pointer), line=e.line, column=e.column,
               page=text(e.page), problems=problems, text=_format(e))


def python_error(cls, code, message, *, block="", port="", attr=""):
    """An error found on the Python side before calling the library (e.g. a numpy dtype)."""
    where = (f'block "{block}": ' if block else "") + (f'port "{port}": ' if port else "")
    return cls(message, code=code, block=block, port=port, attr=attr,
               problems=[Problem("error", cls.status, code, block, port, attr, message,
                                 text=where + message)],
               text=where + message)


def check(status, err, diags=None):
    """Raise the error in `err` when `status` is not BF_OK."""
    if status != 0:
        raise error_from(err, diags)


def new_error():
    return new(BfError)  # with spare room after it: see _lib.new
