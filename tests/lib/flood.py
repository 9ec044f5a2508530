# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
# flood.py TARGET N: N connections to TARGET, never a byte sent; one the server closes is opened
# again at once, until killed.  TARGET: tcp:PORT (to 127.0.0.1, connection i from 127.0.0.(2+i):
# each a new client address) or unix:PATH.  Prints "ready" once N have been tried.
import select, socket, sys

kind, where = sys.argv[1].split(":", 1)
n = int(sys.argv[2])


def new(i):
    if kind == "unix":
        return socket.socket(socket.AF_UNIX), where
    s = socket.socket()
    s.bind(("127.0.0.%d" % (2 + i), 0))
    return s, ("127.0.0.1", int(where))


socks = {}


def open_one(i):
    s, dest = new(i)
    s.settimeout(0.2)  # a server that accepts nothing more: try again later
    try:
        s.connect(dest)
        socks[i] = s
    except OSError:
        s.close()
        socks.pop(i, None)


for i in range(n):
    open_one(i)
print("ready", flush=True)
while True:
    r, _, _ = select.select(list(socks.values()), [], [], 0.1)
    for s in r:  # readable: closed (the server never answers a request not sent)
        i = next(k for k, v in socks.items() if v is s)
        s.close()
        open_one(i)
    for i in range(n):
        if i not in socks:
            open_one(i)
