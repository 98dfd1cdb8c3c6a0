#!/bin/busybox sh
# The one /init of every guest (atsdbench guest's and scripts/power-check's), busybox only.  Prints
# the guest's facts and loads etc/atsd/modules/*.ko in order, then for each run K of /etc/atsd/ (K.args: atsd's words, K.attrs: the same as
# name=value for the markers, K.tracepoints: tracefs events recorded around that run) atsd's output and
# table between markers, each trace gzip+base64; then the command of /etc/atsd/command (output
# streamed, the files it leaves in /out gzip+base64), and powers off.  Its own steps use busybox
# (PATH=/bin); the command sees an added root's tools first.  atsdbench/guest/console.py reads
# what it prints; atsdbench/guest/initramfs.py packs it as package data.
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
dmesg -n 1
echo "@@ guest"
echo "@@ release $(uname -r)"
echo "@@ uname_m $(uname -m)"
grep -E '^(cpu|MMU|platform|model name)[[:space:]]*:' /proc/cpuinfo | sort -u | sed 's/^/@@ cpuinfo /'
echo "@@ page_size $(awk '/^KernelPageSize/ {print $2 * 1024; exit}' /proc/self/smaps)"
for d in /sys/kernel/debug/powerpc /sys/kernel/debug/x86 /sys/kernel/debug; do
	[ -r $d/tlb_single_page_flush_ceiling ] && echo "@@ ceiling $(cat $d/tlb_single_page_flush_ceiling)" && break
done
[ -r /sys/kernel/debug/powerpc/tlb_local_single_page_flush_ceiling ] &&
	echo "@@ local_ceiling $(cat /sys/kernel/debug/powerpc/tlb_local_single_page_flush_ceiling)"
loaded=
for m in /etc/atsd/modules/*.ko; do
	[ -f "$m" ] || continue
	if insmod "$m" 2>/tmp/insmod.err; then
		loaded="$loaded,${m##*/}"
	else
		echo "@@ module-failed ${m##*/}: $(head -n 1 /tmp/insmod.err)"
	fi
done
[ -n "$loaded" ] && echo "@@ modules ${loaded#,}"
T=/sys/kernel/tracing
k=1
while [ -f /etc/atsd/$k.args ]; do
	attrs="run=$k $(cat /etc/atsd/$k.attrs)"
	echo "@@ running run=$k"
	traced=
	[ -f /etc/atsd/$k.tracepoints ] && traced=1
	if [ -n "$traced" ]; then
		events=
		for e in $(tr , ' ' </etc/atsd/$k.tracepoints); do
			[ -d "$T/events/$e" ] && events="$events $e"
		done
		{ echo 0 >$T/tracing_on; cat /etc/atsd/trace_buffer_kb >$T/buffer_size_kb; echo >$T/trace; } 2>/dev/null
		for e in $events; do echo 1 >"$T/events/$e/enable"; done
		echo 1 >$T/tracing_on 2>/dev/null
	fi
	atsd $(cat /etc/atsd/$k.args) -o /tmp/out.txt </dev/null >/tmp/atsd.table 2>/tmp/atsd.log
	rc=$?
	if [ -n "$traced" ]; then
		echo 0 >$T/tracing_on 2>/dev/null
		for e in $events; do echo 0 >"$T/events/$e/enable"; done
	fi
	echo "@@ begin atsd $attrs"
	cat /tmp/out.txt 2>/dev/null
	echo "@@ end atsd rc=$rc"
	echo "@@ begin table $attrs"
	cat /tmp/atsd.table
	echo "@@ end table"
	[ $rc = 0 ] || sed 's/^/@@ atsd-error /' /tmp/atsd.log
	if [ -n "$traced" ]; then
		lost=$(cat $T/per_cpu/cpu*/stats 2>/dev/null | awk '/^(overrun|dropped events):/ {n += $NF} END {print n + 0}')
		echo "@@ begin trace $attrs events=$(echo $events | tr ' ' ,)"
		grep -v '^#' $T/trace 2>/dev/null | gzip -c | base64
		echo "@@ end trace rc=$rc overrun=$lost"
		echo >$T/trace 2>/dev/null
	fi
	rm -f /tmp/out.txt
	k=$((k + 1))
done
if [ -f /etc/atsd/command ]; then
	mkdir -p /out
	echo "@@ running command"
	echo "@@ begin command"
	(cd /tmp && OUT=/out PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/sh /etc/atsd/command) </dev/null 2>&1
	echo "@@ end command rc=$?"
	(cd /out && find . -type f) | sed 's|^\./||' | while read -r f; do
		case "$f" in *[!A-Za-z0-9_+./-]*) echo "@@ skipped-file $f"; continue ;; esac
		echo "@@ begin file path=$f"
		gzip -c "/out/$f" | base64
		echo "@@ end file"
	done
fi
echo "@@ begin kernel-log"
dmesg | grep -v -E 'Kernel command line|Command line:' | grep -E 'BUG|Oops|WARNING|Call Trace|Kernel panic' | head -20
echo "@@ end kernel-log"
echo "@@ done"
poweroff -f
