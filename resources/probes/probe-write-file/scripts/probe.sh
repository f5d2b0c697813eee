#!/bin/sh
# Probe: can the command create a file in a folder outside the workspace?
# Usage: probe.sh ID FOLDER TOKEN. Writes FOLDER/probe-ID.txt holding TOKEN (the lab checks it
# from the host side and removes it); FOLDER `SKILL_DIR` means "$SKILL_DIR". Creates no folders.
id=$1 folder=$2 token=$3
if [ "$folder" = SKILL_DIR ]; then folder=$SKILL_DIR; fi
target="$folder/probe-$id.txt"
if err=$( (printf '%s\n' "$token" >"$target") 2>&1); then
  echo "PROBE $id reached wrote-file"
  exit 0
fi
case $err in
  *"ead-only"*) detail=read-only-filesystem ;;
  *"ermission denied"*) detail=permission-denied ;;
  *"o such file"* | *"onexistent"*) detail=not-visible ;;
  *) detail=write-failed ;;
esac
echo "PROBE $id blocked $detail"
