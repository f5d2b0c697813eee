#!/usr/bin/env bash
# Build the sandbox image without any registry: a scratch image holding Debian's static busybox
# and a non-root `sandbox` user (uid 1000). Needs the busybox-static package and a running engine.
# Usage: build-offline.sh [TAG]   (default skill-workbench-sandbox:latest)
set -euo pipefail
tag="${1:-skill-workbench-sandbox:latest}"
busybox=/bin/busybox  # from Debian's busybox-static: no shared libraries to copy along
[ -x "$busybox" ] || { echo "build-offline: install Debian's busybox-static first" >&2; exit 1; }

context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
root="$context/rootfs"
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/workspace" "$root/home/sandbox" "$root/mnt/skills"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\nsandbox:x:1000:\n' > "$root/etc/group"
cat > "$context/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
ENV PATH=/bin HOME=/home/sandbox
USER 1000:1000
WORKDIR /workspace
DOCKERFILE
chown -R 1000:1000 "$root/home/sandbox" "$root/workspace"
chmod 1777 "$root/tmp"
docker build --quiet --tag "$tag" "$context"
echo "build-offline: built $tag"
