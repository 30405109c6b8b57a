"""A private git repository served over HTTP with basic auth: `git
http-backend` as CGI behind a small WSGI server of the standard library,
which checks the Authorization header itself (test_credentials.py)."""
import base64
import os
import subprocess
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class GitHttp:
    """Serves the bare repositories under `root` at http://127.0.0.1:PORT/.
    Only `username`/`password` (changeable: rotation) get in."""

    def __init__(self, root, username, password):
        self.root = root
        self.username = username
        self.password = password
        self.refused = 0
        self.server = make_server("127.0.0.1", 0, self._app, server_class=_Server,
                                  handler_class=_Quiet)
        self.port = self.server.server_port
        self.host = f"127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name):
        return f"http://{self.host}/{name}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def _authorized(self, environ):
        header = environ.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return user == self.username and password == self.password

    def _app(self, environ, start_response):
        if not self._authorized(environ):
            self.refused += 1
            start_response("401 Unauthorized",
                           [("WWW-Authenticate", 'Basic realm="private"'),
                            ("Content-Type", "text/plain")])
            return [b"authentication required\n"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": self.root,
               "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": self.username,
               "REQUEST_METHOD": environ["REQUEST_METHOD"],
               "PATH_INFO": environ.get("PATH_INFO", ""),
               "QUERY_STRING": environ.get("QUERY_STRING", ""),
               "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
               "CONTENT_LENGTH": str(len(body))}
        for key in ("HTTP_CONTENT_ENCODING", "HTTP_GIT_PROTOCOL"):
            if key in environ:
                env[key] = environ[key]
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True, check=False).stdout
        sep = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
        head, _, payload = out.partition(sep)
        status, headers = "200 OK", []
        for line in head.decode().splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = value.strip()
            elif name:
                headers.append((name, value.strip()))
        start_response(status, headers)
        return [payload]
