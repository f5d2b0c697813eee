#!/usr/bin/env bash
# The offline builder of the sandbox image ships inside the package (resources/sandbox-image/,
# `workbench image build --offline` runs it); this entry point is for CI and the source tree.
# Usage: build-offline.sh [--force] [TAG]
exec bash "$(dirname "$0")/../../resources/sandbox-image/build-offline.sh" "$@"
