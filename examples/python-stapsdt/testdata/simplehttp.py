"""http.server with a run-time probe, written for the python-stapsdt
package's API (PyPI "stapsdt" 0.1.1): Provider(name) with its defaults (no
way to ask for a file), add_probe, load, fire. It serves the directory in
argv[1] on a free loopback port, prints "ready PORT" and fires
simplehttp:file_transfer(ip, path, size) for every file it sends.
"""
import http.server
import os
import sys

import stapsdt

provider = stapsdt.Provider("simplehttp")
file_transfer = provider.add_probe(
    "file_transfer", stapsdt.ArgTypes.uint64, stapsdt.ArgTypes.uint64, stapsdt.ArgTypes.uint64)
if provider.load():
    sys.exit("load failed")


class Handler(http.server.SimpleHTTPRequestHandler):
    def send_head(self):
        f = super().send_head()
        if f is not None:
            file_transfer.fire(self.client_address[0], self.path, os.fstat(f.fileno()).st_size)
        return f

    def log_message(self, *args):
        pass


os.chdir(sys.argv[1])
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print("ready", server.server_address[1], flush=True)
server.serve_forever()
