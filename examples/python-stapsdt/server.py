"""http.server with a USDT probe per request, made at run time.

    LIBSTAPSDT=bin/libstapsdt.so.0 python3.11 server.py [--file] [DIR]

serves DIR (default: the current directory) on 127.0.0.1 at a free port,
prints "ready PORT" and fires simplehttp:file_transfer(ip, path, size) for
every file it sends. Trace it (see README.md):

    sudo usdtkit trace -p PID 'usdt::simplehttp:file_transfer' \\
        -F 'simplehttp:file_transfer="%s %s %d", str(arg0), str(arg1), arg2'

--file puts the probes' object in a file instead of a memfd; bpftrace -p
and tplist-bpfcc -p find either.
"""
import http.server
import os
import sys

import stapsdt

args = sys.argv[1:]
memfd = "--file" not in args
args = [a for a in args if a != "--file"]
root = args[0] if args else "."

provider = stapsdt.Provider("simplehttp", memfd=memfd)
file_transfer = provider.add_probe(
    "file_transfer", stapsdt.ArgTypes.uint64, stapsdt.ArgTypes.uint64, stapsdt.ArgTypes.uint64)
provider.load()


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw):
        super().__init__(*a, directory=root, **kw)

    def send_head(self):
        f = super().send_head()
        if f is not None and file_transfer.is_enabled:
            size = os.fstat(f.fileno()).st_size if hasattr(f, "fileno") else 0
            file_transfer.fire(self.client_address[0], self.path, size)
        return f

    def log_message(self, *a):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("ready", server.server_address[1], flush=True)
try:
    server.serve_forever()
finally:
    provider.unload()
