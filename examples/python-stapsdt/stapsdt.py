"""USDT probes for Python at run time, with no build step.

A ctypes module over usdtkit's libstapsdt-compatible library
(make libstapsdt; bin/libstapsdt.so.0). Its API has the shape of the
python-stapsdt package, so programs written for that package run with it:

    import stapsdt
    provider = stapsdt.Provider("simplehttp")
    probe = provider.add_probe("file_transfer", stapsdt.ArgTypes.uint64,
                               stapsdt.ArgTypes.uint64, stapsdt.ArgTypes.uint64)
    provider.load()
    probe.fire("127.0.0.1", "/index.html", 1234)   # does nothing untraced

Differences from python-stapsdt: up to 12 arguments; every argument is
passed as its declared type (ints of any size, str encoded as UTF-8 and
bytes as char *, for uint64/int64 arguments); load() and add_probe() raise
StapsdtError with the library's message instead of returning a status;
Provider(name, memfd=False) writes the object to a file instead of a memfd
(the default); bpftrace -p, tplist-bpfcc -p and usdtkit read either.

The library is found as $LIBSTAPSDT, else as libstapsdt.so.0 on the
loader's search path.
"""

import ctypes
import enum
import os

__all__ = ["Provider", "Probe", "ArgTypes", "StapsdtError"]

MAX_ARGUMENTS = 12


class ArgTypes(enum.IntEnum):
    """libstapsdt's ArgType_t: the size in bytes, negative when signed."""

    noarg = 0
    uint8 = 1
    int8 = -1
    uint16 = 2
    int16 = -2
    uint32 = 4
    int32 = -4
    uint64 = 8
    int64 = -8


class _Provider(ctypes.Structure):
    # The public head of SDTProvider_t (libstapsdt.h).
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("probes", ctypes.c_void_p),
        ("errno", ctypes.c_int),
        ("error", ctypes.c_char_p),
        ("_handle", ctypes.c_void_p),
        ("_filename", ctypes.c_char_p),
        ("_memfd", ctypes.c_int),
        ("_use_memfd", ctypes.c_int),
    ]


_lib = ctypes.CDLL(os.environ.get("LIBSTAPSDT", "libstapsdt.so.0"))
_lib.providerInit.argtypes = [ctypes.c_char_p]
_lib.providerInit.restype = ctypes.POINTER(_Provider)
_lib.providerUseMemfd.argtypes = [ctypes.POINTER(_Provider), ctypes.c_int]
_lib.providerUseMemfd.restype = ctypes.c_int
# providerAddProbe and probeFire are variadic: ctypes gets the fixed
# arguments' types here and each call's variadic ones as ctypes values.
_lib.providerAddProbe.restype = ctypes.c_void_p
_lib.providerLoad.argtypes = [ctypes.POINTER(_Provider)]
_lib.providerLoad.restype = ctypes.c_int
_lib.providerUnload.argtypes = [ctypes.POINTER(_Provider)]
_lib.providerUnload.restype = ctypes.c_int
_lib.providerDestroy.argtypes = [ctypes.POINTER(_Provider)]
_lib.providerDestroy.restype = None
_lib.probeFire.restype = None
_lib.probeIsEnabled.argtypes = [ctypes.c_void_p]
_lib.probeIsEnabled.restype = ctypes.c_int

# The ctypes type each ArgTypes value is passed as in a variadic call:
# smaller integers are promoted to int, as C does.
_CTYPE = {
    ArgTypes.uint8: ctypes.c_uint,
    ArgTypes.int8: ctypes.c_int,
    ArgTypes.uint16: ctypes.c_uint,
    ArgTypes.int16: ctypes.c_int,
    ArgTypes.uint32: ctypes.c_uint,
    ArgTypes.int32: ctypes.c_int,
    ArgTypes.uint64: ctypes.c_uint64,
    ArgTypes.int64: ctypes.c_int64,
}
_MASK = {1: 0xFF, 2: 0xFFFF, 4: 0xFFFFFFFF, 8: 0xFFFFFFFFFFFFFFFF}


class StapsdtError(Exception):
    """An error the library reported (provider->error)."""


class Provider:
    """A USDT provider: add probes, then load() to make them traceable.

    Safe to use from many threads; fire() and is_enabled take no lock.
    """

    def __init__(self, name, memfd=True):
        self._name = name
        self._provider = _lib.providerInit(name.encode("ascii"))
        if not self._provider:
            raise MemoryError("providerInit")
        if not memfd:
            _lib.providerUseMemfd(self._provider, 0)
        self._probes = []

    @property
    def name(self):
        return self._name

    def __str__(self):
        return self._name

    def _error(self, what):
        p = self._provider.contents
        msg = p.error.decode("utf-8", "replace") if p.error else "error %d" % p.errno
        return StapsdtError("%s: %s" % (what, msg))

    def add_probe(self, name, *args):
        """Add a probe with arguments of the ArgTypes given (at most 12)."""
        probe = Probe(self, name, *args)
        self._probes.append(probe)
        return probe

    def load(self):
        """Map the probes into this process; raises StapsdtError."""
        if _lib.providerLoad(self._provider) != 0:
            raise self._error("load provider %s" % self._name)
        return True

    def unload(self):
        """Remove the probes from tracers' view; fire() then does nothing."""
        if _lib.providerUnload(self._provider) != 0:
            raise self._error("unload provider %s" % self._name)
        return True

    @property
    def path(self):
        """The mapped object as /proc/PID/maps shows it, None if not loaded."""
        f = self._provider.contents._filename
        return f.decode() if f else None

    def __del__(self):
        if getattr(self, "_provider", None):
            _lib.providerDestroy(self._provider)
            self._provider = None
            for probe in self._probes:
                probe._probe = None


class Probe:
    """One probe of a Provider; create it with Provider.add_probe."""

    def __init__(self, provider, name, *args):
        if len(args) > MAX_ARGUMENTS:
            raise StapsdtError("probe %s: %d arguments, at most %d" % (name, len(args), MAX_ARGUMENTS))
        self._provider = provider
        self._name = name
        self._args = tuple(ArgTypes(a) for a in args)
        self._probe = _lib.providerAddProbe(
            provider._provider, ctypes.c_char_p(name.encode("ascii")), ctypes.c_int(len(args)),
            *[ctypes.c_int(a) for a in self._args])
        if not self._probe:
            raise provider._error("add probe %s" % name)

    @property
    def name(self):
        return self._name

    @property
    def is_enabled(self):
        """True while a tracer is attached to the probe."""
        return bool(self._probe) and bool(_lib.probeIsEnabled(self._probe))

    def fire(self, *args):
        """Fire the probe with args if a tracer is attached; returns whether
        it did. str and bytes go to uint64/int64 arguments as char *."""
        if not self._probe or not _lib.probeIsEnabled(self._probe):
            return False
        if len(args) > len(self._args):
            raise TypeError("probe %s takes %d arguments, %d given" % (self._name, len(self._args), len(args)))
        args = tuple(args) + (0,) * (len(self._args) - len(args))
        cargs = []
        keep = []
        for t, v in zip(self._args, args):
            if isinstance(v, str):
                v = v.encode("utf-8")
            if isinstance(v, bytes):
                s = ctypes.c_char_p(v)
                keep.append(s)
                cargs.append(ctypes.c_uint64(ctypes.cast(s, ctypes.c_void_p).value or 0))
                continue
            v = int(v) & _MASK[abs(t)]
            if t < 0 and v > _MASK[abs(t)] >> 1:
                v -= _MASK[abs(t)] + 1
            cargs.append(_CTYPE[t](v))
        _lib.probeFire(ctypes.c_void_p(self._probe), *cargs)
        return True
