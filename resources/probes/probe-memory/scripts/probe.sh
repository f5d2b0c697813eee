#!/bin/sh
# Probe: does a memory limit stop a command that allocates past it? Usage: probe.sh ID BYTES.
# Doubles a string until it holds BYTES (at most 512 MiB), then prints `reached`.
id=$1 target=$2
case $target in
  '' | *[!0-9]*) echo "PROBE $id blocked bad-arguments"; exit 2 ;;
esac
if [ "$target" -gt 536870912 ]; then target=536870912; fi
echo "PROBE $id started allocating"
s=xxxxxxxxxxxxxxxx
n=16
while [ "$n" -lt "$target" ]; do
  s="$s$s"
  n=$((n * 2))
done
echo "PROBE $id reached allocated-$n-bytes"
