#!/usr/bin/env python3
"""Regenerate proc-net-tcp and proc-net-tcp6: open a few listeners and
connections, then copy /proc/net/tcp{,6} while they are open."""
import socket


def listen(family, addr, port):
    s = socket.socket(family)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen()
    return s


keep = []
mariadb = listen(socket.AF_INET, "127.0.0.1", 3306)
keep.append(listen(socket.AF_INET, "0.0.0.0", 5000))
keep.append(socket.create_connection(("127.0.0.1", 3306)))
keep.append(mariadb.accept()[0])
glance = listen(socket.AF_INET6, "::", 9292)
keep.append(listen(socket.AF_INET6, "::1", 6640))
keep.append(listen(socket.AF_INET6, "fd00::2", 8774))
keep.append(listen(socket.AF_INET6, "::ffff:192.0.2.2", 9696))
keep.append(socket.create_connection(("::1", 9292)))
keep.append(glance.accept()[0])
for name in ("tcp", "tcp6"):
    with open(f"/proc/net/{name}") as src, open(f"proc-net-{name}", "w") as dst:
        dst.write(src.read())
