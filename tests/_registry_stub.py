"""A stand-in for a schema registry's REST API over HTTP on 127.0.0.1, for unit tests of
confluent-kafka's real ``SchemaRegistryClient`` under kspark's serdes that a real registry cannot
serve: it counts every request (path and Authorization header), and with ``failWith=<status>``
every GET gets that status (a failing registry). It serves the schemas registered on it by id.
It is not a registry (no compatibility checks, no versions): the Spark and Kafka tests use the
real one (the ``schemaRegistry`` fixture, kspark.testing.SchemaRegistry)."""

import http.server
import json
import threading


class RegistryStub:
    def __init__(self, schemas: dict[int, str] | None = None, failWith: int | None = None):
        self.schemas = dict(schemas or {})
        self.failWith = failWith  # an HTTP status every request gets (a failing registry)
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Authorization)
        self._lock = threading.Lock()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                stub._log("GET", self)
                if stub.failWith:
                    return self._send(stub.failWith, {"error_code": stub.failWith * 100, "message": "failing"})
                if self.path.startswith("/schemas/ids/"):
                    sid = int(self.path[len("/schemas/ids/"):].split("?")[0])
                    if sid in stub.schemas:
                        return self._send(200, {"schema": stub.schemas[sid]})
                self._send(404, {"error_code": 40403, "message": "Schema not found"})

            def do_POST(self):
                stub._log("POST", self)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                subject = self.path.split("/")[2] if self.path.startswith("/subjects/") else "?"
                with stub._lock:
                    sid = next((i for i, s in stub.schemas.items() if s == body.get("schema")), None)
                    if sid is None:
                        sid = len(stub.schemas) + 1
                        stub.schemas[sid] = body.get("schema")
                self._send(200, {"id": sid, "subject": subject, "version": 1, "schema": body.get("schema")})

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _log(self, method, handler):
        with self._lock:
            self.requests.append((method, handler.path, handler.headers.get("Authorization")))

    def __enter__(self):
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
