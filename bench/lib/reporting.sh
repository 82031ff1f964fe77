# Sourced by bench scripts, not run: pauses the VM's free page reporting
# while a benchmark runs, and puts it back when it ends.
#
# Why: a VM that hands the memory its guest frees back to its host
# (virtio-balloon's free page reporting) pays a fault on the host for
# every page the guest touches again, and a write into the page cache
# (tmpfs, or any file system's cache before writeback) allocates every
# page it writes. On the VM these scripts were written on, which reports
# freed memory at once, the same one-task IOR-hard write ran at 599 to
# 1616 MiB/s with a pause of 3 s before it, and at 2031 to 2252 with
# reporting paused: whichever of two runs compared came after a pause
# paid for it. Pausing is setting the kernel's page_reporting_order
# above the largest order a free block has (11); the value found is put
# back at exit (not after SIGKILL: then write it back by hand, as
# printed).
#
# Sourcing it reads REPORTING (pause, the default, or keep) and exits 2
# on any other value, so source it before the script makes anything.
# reporting_pause then pauses reporting (root, where the knob exists)
# or, with keep, leaves it; either way one line says what was done.
# The caller's EXIT trap must call reporting_restore.

REPORTING=${REPORTING:-pause}
case $REPORTING in
    pause | keep) ;;
    *) echo "REPORTING=$REPORTING: give pause or keep" >&2; exit 2 ;;
esac
reporting_knob=/sys/module/page_reporting/parameters/page_reporting_order
reporting_was=

reporting_pause() {
    if [ "$REPORTING" = pause ] && [ -w "$reporting_knob" ]; then
        reporting_was=$(cat "$reporting_knob")
        echo 11 > "$reporting_knob"
        echo "free page reporting: paused ($reporting_knob $reporting_was -> 11; put back at exit, or by hand: echo $reporting_was > $reporting_knob)"
    else
        echo "free page reporting: $([ -e "$reporting_knob" ] && echo "left as is" || echo "none here"); on a VM that reports freed memory to its host, page cache writes swing with it"
    fi
}

reporting_restore() {
    if [ -n "$reporting_was" ]; then
        echo "$reporting_was" > "$reporting_knob"
    fi
}
