#!/bin/busybox sh
# /init of scripts/power-check's Python guest: a Debian ppc64el root (python3, numpy, pandas, scipy,
# tabulate, cffi) with atsdbench and its core cross-built for ppc64le in /opt/atsdbench.  Runs the CLI
# as a user would (info, run with 0 and 1 bystanders, show, compare) and prints each command's output
# and the result files (gzip+base64) between "@@ begin"/"@@ end" lines; then powers off.
/bin/busybox mkdir -p /proc /sys /tmp /dev
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
/bin/busybox mount -t debugfs debugfs /sys/kernel/debug
/bin/busybox mount -t tracefs tracefs /sys/kernel/tracing
. /etc/power-check.conf
export PATH=/usr/bin:/bin:/usr/sbin:/sbin:/busybox HOME=/tmp PYTHONPATH=/opt/atsdbench PYTHONDONTWRITEBYTECODE=1
/bin/busybox mkdir -p /busybox
/bin/busybox --install -s /busybox
dmesg -n 1

echo "@@ guest"
grep -E '^(cpu|MMU)[[:space:]]*:' /proc/cpuinfo | sort -u | sed 's/^/@@ cpuinfo /'
echo "@@ page_size $(awk '/^KernelPageSize/ {print $2 * 1024; exit}' /proc/self/smaps)"
echo "@@ ceiling $(cat /sys/kernel/debug/powerpc/tlb_single_page_flush_ceiling 2>/dev/null || echo none)"
echo "@@ local_ceiling $(cat /sys/kernel/debug/powerpc/tlb_local_single_page_flush_ceiling 2>/dev/null || echo none)"

cli() {  # NAME -- atsdbench arguments
	name=$1
	shift
	echo "@@ begin cli-$name atsdbench $*"
	python3 -m atsdbench "$@" 2>&1
	echo "@@ end cli-$name rc=$?"
}

cli info info
for b in $BYSTANDERS; do
	cli "run-b$b" run --size "$PY_SIZE" --strides "$STRIDES" --rounds "$PY_ROUNDS" --reps "$PY_REPS" \
		--bystanders "$b" --seed "$SEED" -o "/tmp/run-b$b.json"
done
cli show show /tmp/run-b1.json
cli compare compare /tmp/run-b0.json /tmp/run-b1.json
for b in $BYSTANDERS; do
	echo "@@ begin result bystanders=$b"
	[ -f "/tmp/run-b$b.json" ] && gzip -c "/tmp/run-b$b.json" | base64
	echo "@@ end result"
done

echo "@@ begin kernel-log"
dmesg | grep -E 'BUG|Oops|WARNING|Call Trace|panic' | head -20
echo "@@ end kernel-log"
echo "@@ done"
poweroff -f
