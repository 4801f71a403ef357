"""Fires USDT probes from Python through ctypes, with no extension module.

Generate the probes first (usdtkit gen -o . myapp.d), then run
    /usr/bin/python3.11 app.py [./myapp.so] [requests]
and trace it with usdtkit or bpftrace (see README.md). Each probe is fired
only when a tracer has enabled it: the check is one read of its semaphore.
"""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "./myapp.so")
request_start = lib.myapp_request__start_fire
request_start.argtypes = [ctypes.c_char_p, ctypes.c_int]
request_done = lib.myapp_request__done_fire
request_done.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_long]
start_sem = ctypes.c_uint16.in_dll(lib, "myapp_request__start_semaphore")
done_sem = ctypes.c_uint16.in_dll(lib, "myapp_request__done_semaphore")

requests = int(sys.argv[2]) if len(sys.argv) > 2 else 10
print("ready", flush=True)
sys.stdin.readline()  # wait until the tracer is attached
for i in range(requests):
    path = b"/item/%d" % i
    t0 = time.monotonic_ns()
    if start_sem.value:
        request_start(path, 100 * i)
    status = 200 if i % 3 else 404
    if done_sem.value:
        request_done(path, status, time.monotonic_ns() - t0)
print("done", flush=True)
