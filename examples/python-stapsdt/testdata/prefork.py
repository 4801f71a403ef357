"""A program written for the python-stapsdt package, pre-forking.

The parent loads provider pyfork with probe hit(uint64 string, int32),
forks one child and waits for it; the child, then the parent, reads
commands from stdin, answering each with its lines and "done":
"fire" fires hit("text from PID", -42) (fired / not enabled), "unload"
unloads the provider, "exit" (child only) ends the child.
"""
import os
import sys

import stapsdt

provider = stapsdt.Provider("pyfork")
hit = provider.add_probe("hit", stapsdt.ArgTypes.uint64, stapsdt.ArgTypes.int32)
if provider.load():
    sys.exit("load failed")

pid = os.fork()
if pid == 0:
    print("child", os.getpid())
else:
    _, status = os.waitpid(pid, 0)
    print("child", pid, "exit", os.waitstatus_to_exitcode(status))
print("done", flush=True)

for line in sys.stdin:
    cmd = line.strip()
    if cmd == "fire":
        fired = hit.fire("text from %d" % os.getpid(), -42)
        print("fired" if fired else "not enabled")
    elif cmd == "unload":
        print("unload", provider.unload())
    elif cmd == "exit" and pid == 0:
        # sys.exit runs Provider.__del__, which destroys the provider in
        # the child.
        sys.stdout.flush()
        sys.exit(0)
    print("done", flush=True)
