#!/bin/busybox sh
# /init of the scripts/power-check guests (busybox only).  Prints what the host checks between
# "@@ begin NAME ..." and "@@ end NAME ..." lines on the console, then powers off.  The plan
# (SIZES, STRIDES, ...) comes from /etc/power-check.conf, written by scripts/power-check.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
. /etc/power-check.conf
# Kernel messages would interleave with the output on the one console; they are printed at the end.
dmesg -n 1
T=/sys/kernel/tracing
D=/sys/kernel/debug/powerpc

echo "@@ guest"
grep -E '^(cpu|MMU|platform|model)[[:space:]]*:' /proc/cpuinfo | sort -u | sed 's/^/@@ cpuinfo /'
echo "@@ page_size $(awk '/^KernelPageSize/ {print $2 * 1024; exit}' /proc/self/smaps)"
echo "@@ ceiling $(cat $D/tlb_single_page_flush_ceiling 2>/dev/null || echo none)"
echo "@@ local_ceiling $(cat $D/tlb_local_single_page_flush_ceiling 2>/dev/null || echo none)"
echo "@@ thp_size $(cat /sys/kernel/mm/transparent_hugepage/hpage_pmd_size 2>/dev/null || echo none)"

run_atsd() {  # NAME ATTRS -- atsd arguments: the output file and atsd's table between markers, its errors after
	name=$1 attrs=$2
	shift 2
	atsd "$@" -o /tmp/out.txt >/tmp/atsd.table 2>/tmp/atsd.log
	rc=$?
	echo "@@ begin $name $attrs"
	cat /tmp/out.txt 2>/dev/null
	echo "@@ end $name rc=$rc"
	echo "@@ begin table $attrs"
	cat /tmp/atsd.table
	echo "@@ end table"
	[ $rc = 0 ] || sed 's/^/@@ atsd-error /' /tmp/atsd.log
	rm -f /tmp/out.txt
}

for size in $SIZES; do
	for b in $BYSTANDERS; do
		run_atsd atsd "size=$size bystanders=$b" --size "$size" --strides "$STRIDES" --rounds "$ROUNDS" \
			--reps "$REPS" --warmup "$WARMUP" --warmup-rounds 0 --bystanders "$b" --seed "$SEED"
	done
done

# One traced pass per stride: the kernel's own invalidation events inside each mprotect call.
events=""
for e in syscalls/sys_enter_mprotect syscalls/sys_exit_mprotect powerpc/tlbie powerpc/tlbia powerpc/hcall_entry; do
	[ -d "$T/events/$e" ] && events="$events $e"
done
echo "$TRACE_BUFFER_KB" > $T/buffer_size_kb
for b in $BYSTANDERS; do
	echo 0 > $T/tracing_on
	echo > $T/trace
	for e in $events; do echo 1 > "$T/events/$e/enable"; done
	echo 1 > $T/tracing_on
	atsd --size "$TRACE_SIZE" --strides "$STRIDES" --rounds 1 --reps 1 --warmup 0 --warmup-rounds 0 \
		--bystanders "$b" --seed "$SEED" -o /tmp/out.txt >/tmp/atsd.log 2>&1
	rc=$?
	echo 0 > $T/tracing_on
	for e in $events; do echo 0 > "$T/events/$e/enable"; done
	lost=0
	for s in $T/per_cpu/cpu*/stats; do
		lost=$((lost + $(awk '/^overrun:/ {print $2}' "$s")))
	done
	echo "@@ begin trace bystanders=$b size=$TRACE_SIZE events=$(echo $events | tr ' ' ,)"
	grep -v '^#' $T/trace | gzip -c | base64
	echo "@@ end trace rc=$rc overrun=$lost"
	[ $rc = 0 ] || sed 's/^/@@ atsd-error /' /tmp/atsd.log
done

echo "@@ begin kernel-log"
dmesg | grep -E 'BUG|Oops|WARNING|Call Trace|panic' | head -20
echo "@@ end kernel-log"
echo "@@ done"
poweroff -f
