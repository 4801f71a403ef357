"""A stand-in for the python-stapsdt package (PyPI "stapsdt" 0.1.1), for
tests on machines that cannot reach PyPI: the same module name, classes and
ctypes calls as that package makes, written from its documented API. It
loads "libstapsdt.so" by name; passes providerAddProbe's ArgType_t values
and probeFire's ints as Python ints (ctypes makes them C ints) and str as
c_char_p; gates fire() on probeIsEnabled; and calls providerDestroy from
__del__ without unloading first.
"""
from ctypes import c_char_p, c_int, c_void_p, cdll
from enum import IntEnum

__all__ = ["Provider", "Probe", "ArgTypes"]

_lib = cdll.LoadLibrary("libstapsdt.so")

providerInit = _lib.providerInit
providerInit.argtypes = [c_char_p]
providerInit.restype = c_void_p
providerAddProbe = _lib.providerAddProbe
providerAddProbe.argtypes = [c_void_p, c_char_p]
providerAddProbe.restype = c_void_p
providerLoad = _lib.providerLoad
providerLoad.argtypes = [c_void_p]
providerLoad.restype = c_int
providerUnload = _lib.providerUnload
providerUnload.argtypes = [c_void_p]
providerUnload.restype = c_int
providerDestroy = _lib.providerDestroy
providerDestroy.argtypes = [c_void_p]
probeFire = _lib.probeFire
probeFire.argtypes = [c_void_p]
probeIsEnabled = _lib.probeIsEnabled
probeIsEnabled.argtypes = [c_void_p]
probeIsEnabled.restype = c_int


class ArgTypes(IntEnum):
    noarg = 0
    uint8 = 1
    int8 = -1
    uint16 = 2
    int16 = -2
    uint32 = 4
    int32 = -4
    uint64 = 8
    int64 = -8


class Provider:
    def __init__(self, name):
        self._provider = providerInit(c_char_p(name.encode("ascii")))
        self._probes = []

    def add_probe(self, name, *args):
        probe = Probe(self, name, *args)
        self._probes.append(probe)
        return probe

    def load(self):
        # As the package does: the status, 0 (False) on success.
        return bool(providerLoad(self._provider))

    def unload(self):
        return bool(providerUnload(self._provider))

    def __del__(self):
        providerDestroy(self._provider)
        for probe in self._probes:
            probe._probe = None


class Probe:
    def __init__(self, provider, name, *args):
        self._probe = providerAddProbe(provider._provider, c_char_p(name.encode("ascii")), len(args), *args)

    def fire(self, *args):
        if not self._probe or not self.is_enabled:
            return False
        args = tuple(c_char_p(a.encode("utf-8")) if isinstance(a, str) else a for a in args)
        probeFire(self._probe, *args)
        return True

    @property
    def is_enabled(self):
        return bool(self._probe) and bool(probeIsEnabled(self._probe))
