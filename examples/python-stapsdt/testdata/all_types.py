"""Fires pytypes:all with 12 arguments of every type through stapsdt.py,
once per "fire" line on stdin (answering fired / not enabled, then done)."""
import sys

sys.path.insert(0, sys.path[0] + "/..")
import stapsdt  # noqa: E402

T = stapsdt.ArgTypes
provider = stapsdt.Provider("pytypes")
probe = provider.add_probe("all", T.int8, T.uint8, T.int16, T.uint16, T.int32, T.uint32,
                           T.int64, T.uint64, T.uint64, T.int64, T.uint64, T.int32)
try:
    provider.add_probe("thirteen", *([T.int8] * 13))
    sys.exit("13 arguments accepted")
except stapsdt.StapsdtError as e:
    print("refused:", e)
provider.load()
print("done", flush=True)
for line in sys.stdin:
    fired = probe.fire(-5, 250, -300, 65000, -70000, 4000000000, -(1 << 40), (1 << 64) - 1,
                       "h\u00e9llo", -1, b"raw", 7)
    print("fired" if fired else "not enabled")
    print("done", flush=True)
