"""A command's memory high-water mark: `atsdbench ARGS` in a fresh interpreter (exec starts a new
memory map, so its VmHWM, unlike ru_maxrss, does not inherit the test process's), its stdin fed by a
shell command (a generated stream: no large file on disk), under an address-space limit where one
is given."""
import os
import subprocess
import sys
import textwrap

NEUTRAL = os.path.dirname(os.path.abspath(__file__))  # not the checkout's root: the installed package

CHILD = textwrap.dedent("""
    import os, resource, sys
    limit = int(os.environ["MEM_LIMIT"])
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    exec(os.environ.get("MEM_PATCH", ""))
    from atsdbench.cli import main
    try:
        code = main(sys.argv[1:])
    finally:
        with open("/proc/self/status") as f:
            hwm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
        os.write(3, str(hwm).encode())
    sys.exit(code)
""")


def peak(args, feed=None, limit=0, patch=""):
    """(CompletedProcess, VmHWM in bytes) of `atsdbench ARGS` with stdin from the shell command
    `feed` (else none), RLIMIT_AS at `limit` bytes (0: none), `patch` run before the CLI imports."""
    r, w = os.pipe()
    env = dict(os.environ, MEM_LIMIT=str(limit), MEM_PATCH=patch)
    line = f'{feed} | "$0" -c "$MEM_CHILD" "$@"' if feed else '"$0" -c "$MEM_CHILD" "$@" < /dev/null'
    env["MEM_CHILD"] = CHILD
    try:
        p = subprocess.run(["bash", "-c", f"exec 3>&{w}; {line}", sys.executable, *map(str, args)],
                           capture_output=True, text=True, env=env, cwd=NEUTRAL, pass_fds=(w,), timeout=300)
    finally:
        os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    return p, int(text) if text else 0
