#!/bin/sh
# Probe: does a limit stop a command that fills the disk with many files, each under the
# per-file size limit? Usage: probe.sh ID TOTAL_BYTES. Writes 1 MiB files into
# ./probe-disk-fill in the workspace until TOTAL_BYTES (at most 512 MiB), then removes them.
id=$1 total=$2
case $total in
  '' | *[!0-9]*) echo "PROBE $id blocked bad-arguments"; exit 2 ;;
esac
if [ "$total" -gt 536870912 ]; then total=536870912; fi
mkdir -p probe-disk-fill 2>/dev/null || { echo "PROBE $id blocked workspace-not-writable"; exit 0; }
written=0 n=0
while [ "$written" -lt "$total" ]; do
  n=$((n + 1))
  if ! err=$(dd if=/dev/zero of="probe-disk-fill/fill-$n" bs=1048576 count=1 2>&1); then
    rm -rf probe-disk-fill
    case $err in
      *"ile too large"* | *"ile size limit"*) detail=file-too-large ;;
      *"o space"* | *"uota"*) detail=no-space ;;
      *) detail=write-failed ;;
    esac
    echo "PROBE $id blocked $detail-after-$written-bytes"
    exit 0
  fi
  written=$((written + 1048576))
done
# The total stands a moment, so a limit that is watched (polled) sees it too. A limit that
# stops the run kills the sleep first: then the probe has not held its total, and says nothing.
sleep 3 || exit 0
rm -rf probe-disk-fill
echo "PROBE $id reached wrote-$written-bytes"
