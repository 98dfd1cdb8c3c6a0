"""A LAVA server as lavacli reaches it: an identity (~/.config/lavacli.yaml, or LAVA_URI and LAVA_TOKEN
in the environment), its XML-RPC API (/RPC2: scheduler.jobs.submit, show, ...) and its REST API
(/api/v0.2/: the jobs' logs).  The token goes into the Authorization header and nowhere else: no
message, URL, manifest or log this module makes holds it."""
import base64
import http.client
import os
import socket
import urllib.error
import urllib.parse
import urllib.request
import xmlrpc.client

from ..errors import UsageError

CONFIG = os.path.join("~", ".config", "lavacli.yaml")
TIMEOUT = 60  # seconds for one call: a job's log is a few hundred KB


class ServerError(UsageError):
    """The server did not answer, or refused: one line, naming the server (never the token); `code`
    the HTTP status or XML-RPC fault code where it gave one."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class Unreachable(ServerError):
    """No answer at all (refused, reset, timed out, 502-504): the kind a restart gives, worth a retry."""


class Identity:
    def __init__(self, uri, username=None, token=None):
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"LAVA URI {public(uri)!r} is no http:// or https:// URL of a server's /RPC2")
        # lavacli takes http://USER:TOKEN@HOST/RPC2 too
        self.username = username or (urllib.parse.unquote(parts.username) if parts.username else None)
        self.token = token or (urllib.parse.unquote(parts.password) if parts.password else None)
        path = parts.path.rstrip("/")
        if not path.endswith("/RPC2"):
            path += "/RPC2"
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        self.rpc = urllib.parse.urlunsplit((parts.scheme, netloc, path, "", ""))
        self.base = self.rpc[:-len("/RPC2")]
        if self.token and not self.username:
            raise UsageError(f"{self.rpc}: a token needs its user (LAVA_USER, or username: in lavacli.yaml)")

    @property
    def server(self):
        """What a fleet's manifest records: the server's URL, without any credential."""
        return self.base + "/"


def public(uri):
    """A URI with any user and password cut out (for messages)."""
    try:
        parts = urllib.parse.urlsplit(uri)
        netloc = parts.netloc.rpartition("@")[2]
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "<unparsable URI>"


def _read_config(path):
    """lavacli.yaml's identities, {name: {key: value}}: the two-level mapping lavacli writes
    (`NAME:` then indented `uri:`, `username:`, `token:`), read without a YAML library."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None
    identities, current = {}, None
    for n, line in enumerate(lines, 1):
        text = line.split(" #", 1)[0].rstrip()
        if not text.strip() or text.lstrip().startswith("#") or text.strip() == "---":
            continue
        key, sep, value = text.strip().partition(":")
        if not sep:
            raise UsageError(f"{path}:{n}: not a `key: value` line of lavacli's identities")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if not line[0].isspace():
            current = identities.setdefault(key.strip(), {})
        elif current is None:
            raise UsageError(f"{path}:{n}: an indented line before any identity")
        else:
            current[key.strip()] = value
    return identities


def identity(name=None, environ=None, config=None):
    """The identity to use: --identity NAME from lavacli.yaml; else LAVA_URI (with LAVA_USER and
    LAVA_TOKEN) from the environment; else lavacli.yaml's `default`."""
    environ = os.environ if environ is None else environ
    path = os.path.expanduser(config or CONFIG)
    if name is None and environ.get("LAVA_URI"):
        return Identity(environ["LAVA_URI"], environ.get("LAVA_USER"), environ.get("LAVA_TOKEN"))
    if name is None and not os.path.exists(path):
        raise UsageError(f"no LAVA server given: --identity NAME of {CONFIG}, or LAVA_URI, LAVA_USER and "
                         "LAVA_TOKEN")
    identities = _read_config(path)
    chosen = name or "default"
    if chosen not in identities:
        have = ", ".join(sorted(identities)) or "none"
        raise UsageError(f"{path}: no identity {chosen!r} (it has {have})")
    entry = identities[chosen]
    if not entry.get("uri"):
        raise UsageError(f"{path}: identity {chosen!r} has no uri")
    return Identity(entry["uri"], entry.get("username"), entry.get("token"))


def _why(error):
    if isinstance(error, urllib.error.URLError) and not isinstance(error, urllib.error.HTTPError):
        error = error.reason
    if isinstance(error, socket.timeout):
        return "timed out"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return type(error).__name__


class _Transport(xmlrpc.client.SafeTransport):
    """xmlrpc's transport with our header and a timeout (its own puts USER:TOKEN@ in the URL, which
    its errors then repeat)."""

    def __init__(self, headers, timeout, https):
        super().__init__(headers=headers)
        self._timeout, self._https = timeout, https

    def make_connection(self, host):
        if self._https:
            conn = super().make_connection(host)
        else:
            conn = xmlrpc.client.Transport.make_connection(self, host)
        conn.timeout = self._timeout
        return conn


class Server:
    def __init__(self, ident, timeout=TIMEOUT):
        self.identity = ident
        self.name = ident.server
        self.timeout = timeout
        headers = []
        if ident.token:
            basic = base64.b64encode(f"{ident.username}:{ident.token}".encode()).decode()
            headers.append(("Authorization", f"Basic {basic}"))
        https = ident.rpc.startswith("https:")
        self._proxy = xmlrpc.client.ServerProxy(ident.rpc, transport=_Transport(headers, timeout, https),
                                                allow_none=True)

    def call(self, method, *args):
        """One XML-RPC call; its failures as one line (ServerError, Unreachable)."""
        try:
            return getattr(self._proxy, method)(*args)
        except xmlrpc.client.Fault as e:
            raise self._refused(e.faultCode, e.faultString, method) from None
        except xmlrpc.client.ProtocolError as e:
            raise self._refused(e.errcode, e.errmsg, method) from None
        except (OSError, http.client.HTTPException) as e:
            raise Unreachable(f"LAVA server {self.name} does not answer ({_why(e)})") from None
        except xmlrpc.client.ResponseError:
            raise ServerError(f"LAVA server {self.name}: {method} gave no XML-RPC answer") from None

    def _refused(self, code, text, method):
        text = " ".join(str(text).split())[:200]
        if code in (401, 403):
            who = self.identity.username or "anonymous"
            return ServerError(f"LAVA server {self.name} refused {who}'s token ({code} {text}): check the "
                               "identity's token", code)
        if code in (502, 503, 504):
            return Unreachable(f"LAVA server {self.name} does not answer ({code} {text})", code)
        return ServerError(f"LAVA server {self.name}: {method}: {code} {text}", code)

    def rest(self, path, missing_ok=False):
        """GET /api/v0.2/PATH: its bytes (None for a 404 where missing_ok)."""
        request = urllib.request.Request(f"{self.identity.base}/api/v0.2/{path}")
        if self.identity.token:
            request.add_header("Authorization", f"Token {self.identity.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as e:
            if e.code == 404 and missing_ok:
                return None
            raise self._refused(e.code, e.reason, f"GET /api/v0.2/{path}") from None
        except (OSError, http.client.HTTPException) as e:
            raise Unreachable(f"LAVA server {self.name} does not answer ({_why(e)})") from None

    # the calls lab makes
    def submit(self, definition):
        job = self.call("scheduler.jobs.submit", definition)
        if isinstance(job, list):  # a multinode job gives several ids
            raise ServerError(f"LAVA server {self.name} made {len(job)} jobs of one definition (multinode?): "
                              "lab submits single-node jobs")
        return job

    def show(self, job):
        return self.call("scheduler.jobs.show", str(job))

    def log(self, job):
        return self.rest(f"jobs/{job}/logs/", missing_ok=True)

    def device_type(self, name):
        try:
            return self.call("scheduler.device_types.show", name)
        except ServerError as e:
            if e.code == 404:
                raise UsageError(f"LAVA server {self.name} has no device type {name!r}") from None
            raise

    def device(self, name):
        try:
            return self.call("scheduler.devices.show", name)
        except ServerError as e:
            if e.code == 404:
                raise UsageError(f"LAVA server {self.name} has no device {name!r}") from None
            raise

    def tags(self):
        return {t["name"] if isinstance(t, dict) else str(t) for t in self.call("scheduler.tags.list")}
