#!/usr/bin/env python3
"""Sends exactly N requests of one benchmark case over K keep-alive connections (loopback),
checking every response, for instruction counting (bench/callgrind/count.sh)."""
import os, socket, sys, threading

def post(sock, buf, req):
    sock.sendall(req)
    while b"\r\n\r\n" not in buf[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        buf[0] += chunk
    head, rest = buf[0].split(b"\r\n\r\n", 1)
    length = None
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    if length is None:
        raise SystemExit("no content-length: " + head.decode(errors="replace"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        rest += chunk
    buf[0] = rest[length:]
    status = head.split(b" ", 2)[1]
    return status, rest[:length]

def request(port, method, name, body):
    hdr = [f"POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json",
           "Accept: application/json, text/event-stream", "MCP-Protocol-Version: 2026-07-28",
           f"Mcp-Method: {method}"]
    if name:
        hdr.append(f"Mcp-Name: {name}")
    hdr.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(hdr) + "\r\n\r\n").encode() + body

def main():
    port, method, name, body_file, expect, n, k = sys.argv[1:8]
    n, k = int(n), int(k)
    body = open(body_file, "rb").read()
    req = request(port, method, name if name != "-" else "", body)
    errors = []
    def worker(count):
        try:
            s = socket.create_connection(("127.0.0.1", int(port)))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buf = [b""]
            for _ in range(count):
                status, resp = post(s, buf, req)
                if status != b"200" or expect.encode() not in resp or b'"error"' in resp:
                    errors.append((status, resp[:300]))
                    return
            s.close()
        except BaseException as e:  # noqa
            errors.append(repr(e))
    per = [n // k + (1 if i < n % k else 0) for i in range(k)]
    ts = [threading.Thread(target=worker, args=(c,)) for c in per]
    for t in ts: t.start()
    for t in ts: t.join()
    if errors:
        raise SystemExit(f"errors: {errors[:3]}")

main()
