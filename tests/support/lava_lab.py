"""A LAVA lab of its own on this machine, for tests/lab/test_server.py: a PostgreSQL cluster in a temporary
folder on a free port, lava-server (gunicorn) on another and its scheduler, one worker with qemu devices.
Nothing of the machine's is changed but one folder of the worker's own under /etc/lava-server/dispatcher.d
(the worker's environment: libguestfs' settings), removed with the rest by stop().  Debian 12's packages:
lava-server, lava-dispatcher, postgresql."""
import glob
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

NEEDS = ("lava-server", "lava-worker", "lava-run", "gunicorn3", "qemu-system-x86_64")
DISPATCHER_D = pathlib.Path("/etc/lava-server/dispatcher.d")
DISPATCHER_TMP = "/var/lib/lava/dispatcher/tmp"
LAB = pathlib.Path(__file__).resolve().parent.parent.parent / "lava"


def missing():
    """What this machine lacks for a lab, as a skip reason, or None."""
    gone = [t for t in NEEDS if not shutil.which(t)]
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        gone.append("postgresql")
    if gone:
        return f"needs {', '.join(gone)} (apt-get install lava-server lava-dispatcher postgresql)"
    if os.geteuid() != 0:
        return "needs root (the cluster's user, the worker's environment)"
    return None


def cases(log):
    """{case: (result, measurement)} of a job's atsdbench test cases (lava's results in its log, one
    {"dt", "lvl", "msg"} a line)."""
    out = {}
    for line in log.splitlines():
        if '"lvl": "results"' not in line:
            continue
        line = re.sub(r'(:\s*)! (")', r"\1\2", line[2:] if line.startswith("- ") else line)  # YAML's `! "965"`
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        msg = entry.get("msg") or {}
        if isinstance(msg, dict) and msg.get("definition") == "0_atsdbench":
            out[msg.get("case")] = (msg.get("result"), msg.get("measurement"))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """folder: where the lab's files go (default: a new one under /tmp, which the cluster's user and the
    scheduler's, lavaserver, can reach: pytest's tmp_path is root's alone), removed by stop()."""

    def __init__(self, folder=None, devices=("qemu01", "qemu02"), worker_env=None):
        self._made = folder is None
        self.folder = pathlib.Path(folder or tempfile.mkdtemp(prefix="atsdbench-lab-"))
        self.folder.chmod(0o755)
        self.devices = devices
        self.worker_env = worker_env or {}
        self.worker = f"atsdbench-test-{os.getpid()}"
        self.procs = []
        self.pg = None
        self.token = None

    # the pieces
    def _run(self, *args, **kw):
        return subprocess.run(args, capture_output=True, text=True, check=True, timeout=300, env=self.env, **kw)

    def manage(self, *args):
        return self._run("lava-server", "manage", *args).stdout

    def _spawn(self, name, *args):
        log = open(self.folder / f"{name}.log", "w")
        self.procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))

    def start(self):
        f = self.folder
        [bin_dir] = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1:]
        pg = f / "pg"
        pg.mkdir()
        shutil.chown(pg, "postgres")
        self.pg_port, self.port = free_port(), free_port()
        as_pg = ["runuser", "-u", "postgres", "--"]
        subprocess.run([*as_pg, f"{bin_dir}/initdb", "-D", str(pg / "data"), "-A", "trust", "-U", "postgres"],
                       check=True, capture_output=True, timeout=120)
        self.pg = (as_pg, f"{bin_dir}/pg_ctl", pg / "data")
        subprocess.run([*as_pg, self.pg[1], "-D", str(self.pg[2]), "-w", "-l", str(pg / "log"), "-o",
                        f"-p {self.pg_port} -k {pg} -c listen_addresses=127.0.0.1", "start"],
                       check=True, capture_output=True, timeout=120)
        subprocess.run([*as_pg, f"{bin_dir}/createdb", "-h", "127.0.0.1", "-p", str(self.pg_port), "lava"],
                       check=True, capture_output=True, timeout=60)
        for d in ("devices", "media", "worker"):
            (f / d).mkdir()
        self.env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8",
                    "DATABASE_URL": f"postgres://postgres@127.0.0.1:{self.pg_port}/lava",
                    "SECRET_KEY": "a-test-lab-of-its-own", "ALLOWED_HOSTS": "127.0.0.1",
                    "INSTANCE_NAME": "atsdbench-test",
                    "LAVA_SETTINGS_DEVICES_PATH": str(f / "devices"), "LAVA_SETTINGS_MEDIA_ROOT": str(f / "media"),
                    "LAVA_SETTINGS_DEBUG": "false", "HOME": str(f)}
        self.manage("migrate", "--noinput")
        self._spawn("gunicorn", "gunicorn3", "lava_server.wsgi", "--bind", f"127.0.0.1:{self.port}", "--workers",
                    "2", "--timeout", "120")
        self._spawn("scheduler", "lava-server", "manage", "lava-scheduler", "--level", "INFO", "--log-file",
                    str(f / "scheduler-own.log"))
        self.manage("users", "add", "--superuser", "--staff", "--passwd", "not-a-secret", "admin")
        self.token = self.manage("tokens", "add", "--user", "admin").strip().splitlines()[-1].strip()
        worker_token = self.manage("workers", "add", self.worker).split("Token:")[-1].strip()
        own = DISPATCHER_D / self.worker
        own.mkdir(parents=True)
        env_lines = ["purge: true", "overrides:", "  LC_ALL: C.UTF-8", "  LANG: C",
                     "  PATH: /usr/local/bin:/usr/local/sbin:/bin:/usr/bin:/usr/sbin:/sbin"]
        env_lines += [f"  {k}: '{v}'" for k, v in self.worker_env.items()]
        (own / "env.yaml").write_text("\n".join(env_lines) + "\n")
        # the dispatcher's job folders (/var/lib/lava/dispatcher/tmp/PREFIXJOB) named as this lab's
        (own / "dispatcher.yaml").write_text(f"prefix: '{self.worker}-'\n")
        self.manage("device-types", "add", "qemu")
        for d in self.devices:
            shutil.copy(LAB / "devices" / "qemu-amd64.jinja2", f / "devices" / f"{d}.jinja2")
            self.manage("devices", "add", "--device-type", "qemu", "--worker", self.worker, "--tags", d, "--", d)
        self.wait_http()
        # LAVA runs each job under `nice` (+10): the worker starts 10 below (this lab is root's), so a job's
        # qemu shares the machine evenly with what runs beside it instead of starving (under CI's other
        # tests a boot ran past its 10-minute timeout)
        self._spawn("worker", "nice", "-n", "-10", "lava-worker", "--url", f"http://127.0.0.1:{self.port}/",
                    "--token", worker_token,
                    "--name", self.worker, "--worker-dir", str(f / "worker"), "--log-file", str(f / "worker-own.log"))
        return self

    def wait_http(self, timeout=120):
        end = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v0.2/", timeout=10):
                    return
            except OSError:
                if time.monotonic() > end:
                    raise
                time.sleep(1)

    def wait_devices(self, timeout=300):
        """Until every device is Idle (the worker is online)."""
        end = time.monotonic() + timeout
        while True:
            out = self.manage("devices", "list")
            if all(f"{d}" in out for d in self.devices) and out.count("Idle") >= len(self.devices):
                return out
            if time.monotonic() > end:
                raise TimeoutError(out)
            time.sleep(3)

    @property
    def uri(self):
        return f"http://127.0.0.1:{self.port}/RPC2"

    def stop(self):
        """Every process, the cluster and the worker's folder, whatever start() got to."""
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)
        for _ in range(100):  # a job's lava-run and qemu: in the worker's session, process groups of their own
            left = self.leftovers()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        if self.pg is not None:
            as_pg, pg_ctl, data = self.pg
            subprocess.run([*as_pg, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True,
                           timeout=120)
        shutil.rmtree(DISPATCHER_D / self.worker, ignore_errors=True)
        for job_dir in glob.glob(f"{DISPATCHER_TMP}/{self.worker}-*"):  # a job killed half-way
            shutil.rmtree(job_dir, ignore_errors=True)
        if self._made:
            shutil.rmtree(self.folder, ignore_errors=True)

    def leftovers(self):
        """Processes still running in a session this lab started, or with its folder on their command line."""
        sessions = {p.pid for p in self.procs}
        mark = str(self.folder).encode()
        out = []
        for proc in pathlib.Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                stat = (proc / "stat").read_text().rpartition(")")[2].split()
                if stat[0] != "Z" and (int(stat[3]) in sessions or mark in (proc / "cmdline").read_bytes()):
                    out.append(int(proc.name))
            except (OSError, IndexError, ValueError):
                pass
        return out

    def logs(self, lines=20):
        """The tail of each process's log (for a failure's message)."""
        out = []
        for log in sorted(self.folder.glob("*.log")):
            out.append(f"== {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(out)


if __name__ == "__main__":  # by hand: python3 tests/support/lava_lab.py (Ctrl-C stops it all)
    lab = Lab()
    try:
        lab.start()
        print(lab.uri, lab.token, flush=True)
        print(lab.wait_devices(), flush=True)
        while True:
            time.sleep(60)
    finally:
        lab.stop()
