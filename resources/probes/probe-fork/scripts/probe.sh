#!/bin/sh
# Probe: does a process limit stop a command that starts many processes? Usage: probe.sh ID COUNT.
# A child shell starts COUNT (at most 256) `sleep 10` processes, then kills them and prints
# `reached`. When a fork fails the child shell dies and this shell prints `blocked`.
id=$1 count=$2
case $count in
  '' | *[!0-9]*) echo "PROBE $id blocked bad-arguments"; exit 2 ;;
esac
if [ "$count" -gt 256 ]; then count=256; fi
if sh -c '
  n=0 pids=
  while [ "$n" -lt "$2" ]; do sleep 10 & pids="$pids $!"; n=$((n + 1)); done
  kill $pids
  echo "PROBE $1 reached started-$n-processes"' probe "$id" "$count"; then
  exit 0
fi
echo "PROBE $id blocked fork-failed"
