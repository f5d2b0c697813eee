#!/usr/bin/env bash
# Build the sandbox image with no registry: a debootstrap (minbase) of Debian bookworm from the
# host's configured apt mirror, stripped, imported into the engine, then a user layer (uid 1000
# `sandbox`, /workspace, /mnt/skills). Needs root, debootstrap and a running engine.
# Cache-friendly: the stripped root filesystem is kept as a tarball in
# ${XDG_CACHE_HOME:-~/.cache}/skill-workbench/, keyed by the package list; the whole build is
# skipped when the image already carries this recipe's label (pass --force to rebuild anyway).
# Usage: build-offline.sh [--force] [TAG]   (default skill-workbench-sandbox:latest)
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag="${1:-skill-workbench-sandbox:latest}"
suite=bookworm
packages="bash,coreutils,findutils,grep,sed,gawk,diffutils,procps,psmisc,file,jq,zip,unzip"
packages="$packages,xz-utils,bzip2,python3,nodejs"
label=org.skill-workbench.recipe
say() { echo "build-offline: $*" >&2; }

# The recipe is this script itself: any change to it (packages, user layer) makes a new image.
recipe="$(sha256sum "$0" | cut -c1-16)"
if [ "$force" = 0 ] && [ "$(docker image inspect --format "{{ index .Config.Labels \"$label\" }}" \
    "$tag" 2>/dev/null || true)" = "$recipe" ]; then
  say "$tag is current (recipe $recipe); nothing to do"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { say "needs root (debootstrap); run it with sudo"; exit 1; }
command -v debootstrap >/dev/null || { say "install debootstrap first (apt-get install debootstrap)"; exit 1; }

# The first http(s) mirror the host's apt sources name for $suite (one-line or deb822 format).
host_mirror() {
  local file
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$file" ] || continue
    awk -v suite="$suite" '$1 == "deb" { i = 2; if ($i ~ /^\[/) while ($i !~ /\]$/) i++;
      if ($i ~ /^\[/ || $i ~ /\]$/) i++; if ($(i + 1) == suite) { print $i; exit } }' "$file"
  done
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -r "$file" ] || continue
    awk -v suite="$suite" 'BEGIN { RS = ""; FS = "\n" } {
      uris = ""; ok = 0; deb = 0
      for (n = 1; n <= NF; n++) {
        if ($n ~ /^URIs:/) { split(substr($n, 6), u, " "); uris = u[1] }
        if ($n ~ /^Types:/ && $n ~ /(^|[ \t])deb([ \t]|$)/) deb = 1
        if ($n ~ /^Suites:/) { m = split(substr($n, 8), s, " "); for (k = 1; k <= m; k++) if (s[k] == suite) ok = 1 }
      }
      if (uris != "" && ok && deb) { print uris; exit } }' "$file"
  done
}
mirror="${WORKBENCH_DEBIAN_MIRROR:-$(host_mirror | grep -E '^https?://' | head -n 1 || true)}"
mirror="${mirror:-http://deb.debian.org/debian}"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/skill-workbench"
key="$(printf '%s %s %s' "$suite" "$(dpkg --print-architecture)" "$packages" | sha256sum | cut -c1-16)"
tarball="$cache/rootfs-$suite-$key.tar"
mkdir -p "$cache"
if [ -s "$tarball" ]; then
  say "reusing the cached root filesystem $tarball"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  root="$work/rootfs"
  say "debootstrap $suite (minbase) from $mirror with $packages"
  debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" \
    | grep --line-buffered -v -E '^I: (Validating|Extracting|Unpacking) ' \
    | sed -u 's/^/build-offline: debootstrap: /' >&2
  say "stripping apt lists, package caches, docs, man pages and locales"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
    "$root"/usr/share/locale/* "$root"/var/log/* "$root"/debootstrap
  say "packing the root filesystem into the cache"
  tar --numeric-owner -C "$root" -cf "$tarball.part" .
  mv "$tarball.part" "$tarball"
  rm -rf "$work"
  trap - EXIT
fi

base="skill-workbench-sandbox-base:$key"
if docker image inspect "$base" >/dev/null 2>&1; then
  say "reusing the imported base image $base"
else
  say "importing the root filesystem as $base"
  docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' "$tarball" "$base" >/dev/null
fi

# The user layer. HOME is on the read-only root at run time: caches are pointed at /tmp.
say "adding the user layer (sandbox, uid 1000) and tagging $tag"
if ! log="$(DOCKER_BUILDKIT=0 docker build --quiet --label "$label=$recipe" --tag "$tag" - 2>&1 <<DOCKERFILE
FROM $base
RUN groupadd --gid 1000 sandbox \
 && useradd --uid 1000 --gid 1000 --create-home --home-dir /home/sandbox --shell /bin/bash sandbox \
 && mkdir -p /workspace /mnt/skills && chown 1000:1000 /workspace
ENV HOME=/home/sandbox XDG_CACHE_HOME=/tmp/.cache PYTHONDONTWRITEBYTECODE=1 \
    npm_config_cache=/tmp/.npm LANG=C.UTF-8
USER 1000:1000
WORKDIR /workspace
CMD ["bash"]
DOCKERFILE
)"; then
  echo "$log" >&2
  say "the user layer failed"
  exit 1
fi
say "built $tag (recipe $recipe)"
