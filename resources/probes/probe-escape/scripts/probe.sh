#!/bin/sh
# Probe: does the workbench show terminal escape sequences from a command as plain text?
# Usage: probe.sh ID. Prints a window-title change, colours and a bell, all harmless.
id=$1
printf 'title: \033]0;probe-escape-title\007 colour: \033[1;31mRED\033[0m bell: \007\n'
echo "PROBE $id reached printed-escapes"
