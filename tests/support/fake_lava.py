"""A LAVA server's two APIs as lab speaks them, in this process on 127.0.0.1: XML-RPC at /RPC2
(scheduler.jobs.submit/show, device_types.show, devices.show, tags.list; Basic USER:TOKEN) and REST
at /api/v0.2/jobs/ID/logs/ (Token TOKEN).  A test moves the jobs on itself (finish, cancel), and can
stop the server and start it again on the same port (a restart)."""
import base64
import gzip
import hashlib
import http.server
import json
import threading
import xmlrpc.client
import xmlrpc.server

import pytest

USER, TOKEN = "admin", "s3cret-t0ken-never-shown"


def result_block(name, raw, chunk=76):
    """A result file as lava/atsdbench.yaml prints it into the log."""
    body = base64.b64encode(gzip.compress(raw)).decode()
    lines = [body[i:i + chunk] for i in range(0, len(body), chunk)]
    return [f"ATSDBENCH-RESULT-BEGIN {name} {len(raw)}", *lines,
            f"ATSDBENCH-RESULT-END {name} {hashlib.sha256(raw).hexdigest()}"]


def log_of(lines):
    """A job's log as the REST API gives it (one YAML record a line)."""
    return "\n".join('- {"dt": "2026-12-06T20:00:00.000000", "lvl": "target", "msg": %s}' % json.dumps(line)
                     for line in lines).encode()


class FakeLava:
    def __init__(self, devices=None, tags=None):
        # {hostname: (device type, [tags])}
        self.devices = devices or {"qemu01": ("qemu", ["qemu01"]), "qemu02": ("qemu", ["qemu02"])}
        self.tags = set(tags or ()) | {t for _, ts in self.devices.values() for t in ts}
        self.jobs = {}  # id: {"definition", "state", "health", "device", "failure_comment", "log"}
        self.calls = []  # (method or path, authorised)
        self.submit_hook = None  # called with the job id after each submit (a test's Ctrl-C)
        self.lock = threading.Lock()
        self.port = 0
        self.httpd = None

    # the server's side
    def _rpc(self):
        d = xmlrpc.server.SimpleXMLRPCDispatcher(allow_none=True)
        d.register_function(self._submit, "scheduler.jobs.submit")
        d.register_function(self._show, "scheduler.jobs.show")
        d.register_function(self._device_type, "scheduler.device_types.show")
        d.register_function(self._device, "scheduler.devices.show")
        d.register_function(lambda: [{"name": t, "description": ""} for t in sorted(self.tags)],
                            "scheduler.tags.list")
        return d

    def _submit(self, definition):
        if "device_type: " not in definition:
            raise xmlrpc.client.Fault(400, "Invalid job definition: no device_type.")
        dt = definition.split("device_type: ", 1)[1].split("\n", 1)[0].strip()
        if dt not in {t for t, _ in self.devices.values()}:
            raise xmlrpc.client.Fault(404, "Specified device or device type not found.")
        with self.lock:
            job = len(self.jobs) + 1
            self.jobs[job] = {"definition": definition, "state": "Submitted", "health": "Unknown", "device": None,
                              "failure_comment": None, "log": None}
        if self.submit_hook:
            self.submit_hook(job)
        return job

    def _show(self, job):
        j = self.jobs.get(int(job))
        if j is None:
            raise xmlrpc.client.Fault(404, f"Job '{job}' was not found.")
        return {"id": int(job), "state": j["state"], "health": j["health"], "device": j["device"],
                "device_type": "qemu", "failure_comment": j["failure_comment"]}

    def _device_type(self, name):
        if name not in {t for t, _ in self.devices.values()}:
            raise xmlrpc.client.Fault(404, f"Device-type '{name}' was not found.")
        return {"name": name, "devices": [h for h, (t, _) in self.devices.items() if t == name]}

    def _device(self, name):
        if name not in self.devices:
            raise xmlrpc.client.Fault(404, f"Device '{name}' was not found.")
        t, tags = self.devices[name]
        return {"hostname": name, "device_type": t, "tags": list(tags), "health": "Good"}

    def _handler(self):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, body, kind="text/plain"):
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                expected = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()
                given = self.headers.get("Authorization")
                fake.calls.append(("RPC2", given == expected))
                if self.path != "/RPC2":
                    return self._send(404, b"not found")
                if given is not None and given != expected:
                    return self._send(401, b"Invalid token")
                self._send(200, fake._rpc()._marshaled_dispatch(body), "text/xml")

            def do_GET(self):
                given = self.headers.get("Authorization")
                fake.calls.append((self.path, given == f"Token {TOKEN}"))
                if given is not None and given != f"Token {TOKEN}":
                    return self._send(401, b'{"detail": "Invalid token."}')
                parts = self.path.strip("/").split("/")
                if parts[:3] == ["api", "v0.2", "jobs"] and len(parts) == 5 and parts[4] == "logs":
                    j = fake.jobs.get(int(parts[3])) if parts[3].isdigit() else None
                    if j is not None and j["log"] is not None:
                        return self._send(200, j["log"], "application/yaml")
                return self._send(404, b'{"detail": "Not found."}')

        return Handler

    def start(self):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    @property
    def uri(self):
        return f"http://127.0.0.1:{self.port}/RPC2"

    def env(self, home, token=TOKEN):
        """The environment a test runs lab in: this server and a user's identity, HOME a folder of the test."""
        import os

        return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LAVA_URI": self.uri, "LAVA_USER": USER,
                "LAVA_TOKEN": token}

    # a test's hand on the jobs
    def finish(self, job, health="Complete", device="qemu01", log=b"", comment=None):
        self.jobs[job].update(state="Finished", health=health, device=device, log=log, failure_comment=comment)

    def run(self, job, device="qemu01"):
        self.jobs[job].update(state="Running", device=device)


@pytest.fixture
def lava():
    """A fake server on 127.0.0.1 for one test, stopped after it."""
    fake = FakeLava().start()
    yield fake
    fake.stop()
