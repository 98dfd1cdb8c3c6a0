"""--breakdown's traced passes from outside: a script run in a mount namespace of the test's own with
tracefs mounted (this machine's mounts stay as they are), and the script that sends a signal while the
traced passes' instance is there."""
import subprocess
import sys


def in_namespace(in_tracefs, script, *args, timeout=300, cwd=None):
    """`python -c SCRIPT ARGS...` with tracefs mounted; exits non-zero with no output where the syscall
    tracepoints are missing."""
    return subprocess.run(["unshare", "-m", "sh", "-c", in_tracefs +
                           '[ -d /sys/kernel/tracing/events/syscalls/sys_enter_mprotect ] && exec "$0" -c "$@"',
                           sys.executable, script, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


# argv: OUT SIGNAL COMMAND... (COMMAND is run with `-o OUT` added); prints: seen, exit code, whether the
# instance is left, stderr.
SIGNAL_IN_TRACED_PASSES = r"""
import os, signal, subprocess, sys, time
out, sig, command = sys.argv[1], getattr(signal, sys.argv[2]), sys.argv[3:]
# The traced passes are short: on a loaded machine this poll can miss them, so a few runs are tried
# until one signal lands inside them (the test asserts on that run).
for attempt in range(6):
    if os.path.exists(out):
        os.unlink(out)
    p = subprocess.Popen([*command, "--size", "128M", "--strides", "64K,128K,256K,512K,1M,2M", "--rounds", "1",
                          "--reps", "1", "--warmup", "0", "--warmup-rounds", "0", "--breakdown", "-o", out],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    inst = f"/sys/kernel/tracing/instances/atsdbench-{p.pid}"
    seen, t0 = False, time.monotonic()
    while p.poll() is None and time.monotonic() - t0 < 120:
        try:  # the passes' own instance: its syscall filter names the measuring thread (the probe's has none)
            with open(inst + "/events/syscalls/sys_enter_mprotect/filter") as f:
                seen = "common_pid" in f.read()
        except OSError:
            seen = False
        if seen:
            p.send_signal(sig)
            break
        time.sleep(0.002)
    stdout, stderr = p.communicate(timeout=120)
    if seen:
        break
print(seen, p.returncode, os.path.exists(inst), repr(stderr.strip()))
"""
