#!/bin/sh
# Probe: can the command raise its own limits? Usage: probe.sh ID. For the CPU-time (-t),
# file-size (-f) and address-space (-v) limits that are set, tries in a subshell to raise the
# soft limit to the hard one and the hard one by one; prints what it raised.
id=$1 raised= set=
for opt in t f v; do
  soft=$(ulimit -S -$opt) hard=$(ulimit -H -$opt)
  if [ "$soft" = unlimited ]; then continue; fi
  set=yes
  if [ "$hard" != "$soft" ] && (ulimit -S -$opt "$hard") 2>/dev/null; then raised="$raised-$opt-soft"; fi
  if [ "$hard" != unlimited ] && (ulimit -H -$opt $((hard + 1))) 2>/dev/null; then raised="$raised-$opt-hard"; fi
done
if [ -n "$raised" ]; then
  echo "PROBE $id reached raised$raised"
elif [ -n "$set" ]; then
  echo "PROBE $id blocked held"
else
  echo "PROBE $id blocked no-limit-set"
fi
