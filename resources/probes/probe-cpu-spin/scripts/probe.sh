#!/bin/sh
# Probe: does a control stop a command that spins the CPU? Usage: probe.sh ID [SECONDS].
# Spins for SECONDS of wall time (default 30, at most 60), checking the clock every 20,000
# turns, then prints `reached`: a control that stops it earlier wins.
id=$1 seconds=${2:-30}
case $seconds in
  '' | *[!0-9]*) seconds=30 ;;
esac
if [ "$seconds" -gt 60 ]; then seconds=60; fi
echo "PROBE $id started spinning"
end=$(($(date +%s) + seconds))
i=0
while :; do
  i=$((i + 1))
  if [ $((i % 20000)) -eq 0 ] && [ "$(date +%s)" -ge "$end" ]; then break; fi
done
echo "PROBE $id reached spun-${seconds}s"
