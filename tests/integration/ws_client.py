"""A WebSocket client (RFC 6455) over boxd's unix socket, by hand on a
plain socket: no third-party library, so it can send what a conforming
client never would (unmasked frames, reserved bits, unknown opcodes,
fragmented control frames, lengths over the limit, invalid UTF-8, raw
bytes) and see exactly what boxd answers."""
import base64
import hashlib
import os
import socket
import struct

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class HandshakeRefused(Exception):
    """The server answered the handshake with something other than 101."""

    def __init__(self, status, headers, body):
        super().__init__(f"{status}: {body[:200]!r}")
        self.status = status
        self.headers = headers
        self.body = body


def accept_key(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def frame(opcode, payload=b"", fin=True, mask=True, rsv=0, length=None):
    """A frame's bytes. `rsv` is the 3 reserved bits (0-7); `length`
    declares another payload length than the payload's own."""
    if isinstance(payload, str):
        payload = payload.encode()
    declared = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | (rsv & 7) << 4 | opcode & 0xF])
    mask_bit = 0x80 if mask else 0
    if declared < 126:
        head += bytes([mask_bit | declared])
    elif declared <= 0xFFFF:
        head += bytes([mask_bit | 126]) + struct.pack("!H", declared)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", declared)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class WebSocket:
    """One session. recv() answers nothing by itself: pings and closes are
    returned to the test, which decides what to say."""

    def __init__(self, timeout=10):
        self.timeout = timeout
        self.sock = None
        self.data = b""
        self.status = None
        self.headers = {}

    # ---- the handshake ----

    def connect(self, address, path, headers=None):
        """Connects to `address` (a unix socket's path, or (cid, port) for
        vsock, as in the booted box) and upgrades. `headers` replace or add
        to the usual handshake's (a value of None leaves that header out).
        Raises HandshakeRefused with the answer when it is not 101."""
        family = socket.AF_VSOCK if isinstance(address, tuple) else socket.AF_UNIX
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(address)
        self.key = base64.b64encode(os.urandom(16)).decode()
        fields = {"Host": "boxd", "Upgrade": "websocket", "Connection": "Upgrade",
                  "Sec-WebSocket-Key": self.key, "Sec-WebSocket-Version": "13"}
        fields.update(headers or {})
        lines = [f"GET {path} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in fields.items() if value is not None]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status, answer_headers = self._read_head()
        self.status, self.headers = status, answer_headers
        if status != 101:
            length = int(answer_headers.get("content-length", "0"))
            body = self._take(length)
            self.sock.close()
            raise HandshakeRefused(status, answer_headers, body)
        assert answer_headers.get("upgrade", "").lower() == "websocket", answer_headers
        assert "upgrade" in answer_headers.get("connection", "").lower(), answer_headers
        assert answer_headers.get("sec-websocket-accept") == accept_key(self.key), answer_headers
        return self

    def _read_head(self):
        while b"\r\n\r\n" not in self.data:
            self._more()
        head, self.data = self.data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(lines[0].split()[1]), headers

    def _more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("the server closed the connection")
        self.data += chunk

    def _take(self, n):
        while len(self.data) < n:
            self._more()
        out, self.data = self.data[:n], self.data[n:]
        return out

    # ---- sending ----

    def send_raw(self, data):
        self.sock.sendall(data)

    def send_frame(self, opcode, payload=b"", fin=True, mask=True, rsv=0, length=None):
        self.send_raw(frame(opcode, payload, fin=fin, mask=mask, rsv=rsv, length=length))

    def send_text(self, text):
        self.send_frame(TEXT, text.encode() if isinstance(text, str) else text)

    def send_binary(self, data):
        self.send_frame(BINARY, data)

    def ping(self, payload=b""):
        self.send_frame(PING, payload)

    def close(self, code=1000, reason=""):
        """Sends a close frame (code None: an empty one)."""
        payload = b"" if code is None else struct.pack("!H", code) + reason.encode()
        self.send_frame(CLOSE, payload)

    # ---- receiving ----

    def recv_frame(self):
        """(fin, opcode, payload) of the next frame, as sent."""
        first, second = self._take(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", self._take(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", self._take(8))[0]
        assert not second & 0x80, "a server's frame is never masked"
        assert not first & 0x70, "no extension was negotiated: reserved bits are 0"
        return bool(first & 0x80), first & 0xF, self._take(length)

    def recv(self):
        """(opcode, payload) of the next message, fragments put together;
        a control frame (ping, pong, close) is returned as it comes."""
        fin, opcode, payload = self.recv_frame()
        if opcode & 0x8 or fin:
            return opcode, payload
        parts = [payload]
        while True:
            fin, more, payload = self.recv_frame()
            if more & 0x8:
                continue  # a control frame between fragments: not this message's
            assert more == CONTINUATION, more
            parts.append(payload)
            if fin:
                return opcode, b"".join(parts)

    def recv_close(self):
        """(code, reason) of the server's close frame, skipping anything
        before it; code None for an empty one."""
        while True:
            opcode, payload = self.recv()
            if opcode == CLOSE:
                if not payload:
                    return None, ""
                return struct.unpack("!H", payload[:2])[0], payload[2:].decode()

    def wait_eof(self):
        """True once the server closes the connection (within the timeout)."""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except ConnectionResetError:
            return True

    def shutdown(self):
        if self.sock:
            self.sock.close()
            self.sock = None
