#!/bin/sh
# Probe: can the command read a canary file the lab planted outside the workspace?
# Usage: probe.sh ID PATH TOKEN. Compares the file with TOKEN; never prints the content.
id=$1 path=$2 token=$3
if got=$(cat -- "$path" 2>&1); then
  if [ "$got" = "$token" ]; then
    echo "PROBE $id reached read-canary"
  else
    echo "PROBE $id blocked other-content"
  fi
  exit 0
fi
case $got in
  *"ermission denied"*) detail=permission-denied ;;
  *"o such file"* | *"ot a directory"*) detail=not-visible ;;
  *) detail=read-failed ;;
esac
echo "PROBE $id blocked $detail"
