"""serve_client.py - a small client for `blockflow serve`, for the tests and bench/serve_load.

Python 3 standard library only: http.client for the API and a minimal WebSocket client
(RFC 6455: masked client frames, text and close frames, no extensions). Test code only: the
server itself uses libwebsockets.
"""
import base64
import http.client
import json
import os
import re
import select
import socket
import struct
import subprocess
import time


class Server:
    """A `blockflow serve` process on an ephemeral loopback port."""

    def __init__(self, binary, pages, token="test-token-0123456789", extra=(), env=None):
        self.token = token
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--pages", pages, "--token", token,
             *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.port = None
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"listening on port (\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if not self.port:
            self.proc.kill()
            raise RuntimeError("server did not start: " + self.proc.stderr.read())
        self.host = "127.0.0.1:%d" % self.port

    def stop(self, sig=None):
        import signal
        if self.proc.poll() is None:
            self.proc.send_signal(sig or signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, err

    def alive(self):
        return self.proc.poll() is None

    def request(self, method, path, body=None, headers=None, token=True, raw=False,
                timeout=60):
        """(status, parsed JSON or bytes, response headers)."""
        h = {"Host": self.host}
        if token:
            h["Authorization"] = "Bearer " + (self.token if token is True else token)
        if headers:
            h.update(headers)
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in h.items():
            if v is not None:
                c.putheader(k, v)
        if body is not None:
            data = body.encode() if isinstance(body, str) else body
            c.putheader("Content-Length", str(len(data)))
            c.endheaders(data)
        else:
            c.endheaders()
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        if raw or not hdrs.get("content-type", "").startswith("application/json"):
            return r.status, data, hdrs
        return r.status, json.loads(data), hdrs


class Closed(Exception):
    def __init__(self, code, reason):
        super().__init__("closed %s %r" % (code, reason))
        self.code, self.reason = code, reason


class WebSocket:
    def __init__(self, port, host=None, token=None, origin=None, path="/ws", rcvbuf=None,
                 cookie=None, batch=False):
        # batch: /ws?batch=1, whose frames are JSON arrays of events; recv_json still gives
        # one event at a time (self.frames counts the frames)
        if batch:
            path += "?batch=1"
        self.batch, self.pending, self.frames = batch, [], 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", port))
        self.sock.settimeout(30)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET %s HTTP/1.1" % path, "Host: %s" % (host or "127.0.0.1:%d" % port),
                 "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
                 "Sec-WebSocket-Version: 13"]
        if origin:
            lines.append("Origin: " + origin)
        if token:
            lines.append("Authorization: Bearer " + token)
        if cookie:
            lines.append("Cookie: " + cookie)
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            try:
                chunk = self.sock.recv(4096)
            except (ConnectionResetError, socket.timeout):
                chunk = b""
            if not chunk:
                break
            buf += chunk
        head, _, self.buf = buf.partition(b"\r\n\r\n")
        parts = head.split(b" ")
        self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        self.client = None
        if self.status == 101:
            hello = self.recv_json()
            assert hello["type"] == "hello", hello
            self.client = hello["client"]

    def _read(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no WebSocket data")
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                continue
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed(None, "connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv_frame(self, timeout=60):
        deadline = time.time() + timeout
        b0, b1 = self._read(2, deadline)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._read(2, deadline))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._read(8, deadline))[0]
        return b0 & 0x0F, self._read(n, deadline)

    def recv_json(self, timeout=60):
        while True:
            if self.pending:
                return self.pending.pop(0)
            op, data = self.recv_frame(timeout)
            if op == 1:
                self.frames += 1
                j = json.loads(data)
                if not self.batch:
                    return j
                assert isinstance(j, list) and j, data[:200]
                self.pending.extend(j)
                continue
            if op == 8:
                code = struct.unpack(">H", data[:2])[0] if len(data) >= 2 else None
                raise Closed(code, data[2:].decode(errors="replace"))
            if op == 9:
                self.send(data, opcode=10)

    def send(self, data, opcode=1):
        if isinstance(data, str):
            data = data.encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        key = (mask * (n // 4 + 1))[:n]
        masked = (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
        self.sock.sendall(head + mask + masked)

    def run_events(self, run_id, timeout=120):
        """Every event of run_id up to its final one (events of other runs are skipped)."""
        out = []
        while True:
            ev = self.recv_json(timeout)
            if ev.get("run_id") != run_id:
                continue
            out.append(ev)
            if ev["type"] in ("run_finished", "run_failed", "run_cancelled",
                              "explain_finished", "gradcheck_finished"):
                return out

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
