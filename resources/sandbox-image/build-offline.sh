#!/usr/bin/env bash
# Build the sandbox image with no registry: a debootstrap (minbase) of Debian bookworm with the
# packages of packages.txt from the host's configured apt mirror, stripped, imported into the
# engine, then the Dockerfile beside this script on top of it (which finds every package
# installed, so it needs no registry either). Needs root, debootstrap and a running engine.
# Cache-friendly: the stripped root filesystem is kept as a tarball in
# ${XDG_CACHE_HOME:-~/.cache}/skill-workbench/, keyed by the package list; the whole build is
# skipped when the image already carries this recipe's label (pass --force to rebuild anyway).
# Usage: build-offline.sh [--force] [TAG]   (default skill-workbench-sandbox:latest)
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag="${1:-skill-workbench-sandbox:latest}"
suite=bookworm
here="$(cd "$(dirname "$0")" && pwd)"
packages="$(grep -v '^#' "$here/packages.txt" | paste -sd, -)"
label=org.skill-workbench.recipe
say() { echo "build-offline: $*" >&2; }

# The recipe is this script, the Dockerfile and the package list: any change to one of them
# makes a new image (workbench.executors.docker.image.recipe_hash computes the same).
recipe="$(cat "$here/build-offline.sh" "$here/Dockerfile" "$here/packages.txt" | sha256sum | cut -c1-16)"
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

say "adding the Dockerfile's layers (user sandbox, uid 1000) and tagging $tag"
if ! log="$(DOCKER_BUILDKIT=0 docker build --quiet --build-arg "BASE=$base" \
    --label "$label=$recipe" --tag "$tag" "$here" 2>&1)"; then
  echo "$log" >&2
  say "the Dockerfile's layers failed"
  exit 1
fi
say "built $tag (recipe $recipe)"
