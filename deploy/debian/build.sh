#!/usr/bin/env bash
# Builds a Debian package of vload, for the machines that install with apt:
#
#   deploy/debian/build.sh [BINARY [OUT_DIR]]
#   sudo apt install ./target/debian/vload_0.1.0_amd64.deb     # or dpkg -i
#
# BINARY defaults to target/release/vload (built when missing); OUT_DIR to target/debian. The
# package holds the stripped binary, the manual page (`man vload`), and completions for bash,
# zsh and fish where Debian's shells look for them. It prints the path of the .deb it wrote.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/target/release/vload}
out=${2:-$root/target/debian}
if [[ $# -lt 1 && ! -x $bin ]]; then
    (cd "$root" && cargo build --release --locked --quiet --bin vload)
fi
[[ -x $bin ]] || { echo "deploy/debian/build.sh: $bin is not an executable vload" >&2; exit 2; }
command -v dpkg-deb >/dev/null || { echo "deploy/debian/build.sh: dpkg-deb not found (a Debian or Ubuntu machine builds this)" >&2; exit 2; }

version=$("$bin" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
stage=$(mktemp -d "${TMPDIR:-/tmp}/vload-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
chmod 755 "$stage"

install -d "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/share/man/man1" \
    "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d" "$stage/usr/share/doc/vload"
strip --strip-debug -o "$stage/usr/bin/vload" "$bin"
chmod 755 "$stage/usr/bin/vload"
"$bin" man | gzip -9n >"$stage/usr/share/man/man1/vload.1.gz"
"$bin" completions bash >"$stage/usr/share/bash-completion/completions/vload"
"$bin" completions zsh >"$stage/usr/share/zsh/vendor-completions/_vload"
"$bin" completions fish >"$stage/usr/share/fish/vendor_completions.d/vload.fish"
cat >"$stage/usr/share/doc/vload/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: vload
Files: *
Copyright: vload developers
License: MIT or Apache-2.0
COPYRIGHT
find "$stage/usr" -type f -exec chmod 644 {} + && chmod 755 "$stage/usr/bin/vload"

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: vload
Version: $version
Architecture: $arch
Maintainer: vload developers <vload@example.invalid>
Installed-Size: $size
Depends: libc6
Section: web
Priority: optional
Homepage: https://example.invalid/vload
Description: HTTP load generator and analyzer for caches, proxies and APIs
 vload sends open- or closed-loop HTTP/1.1 and HTTP/2 load, records latency from the
 intended send time (free of coordinated omission), says when the client itself was the
 limit, and compares runs with confidence intervals (vload attack, vload compare).
CONTROL

mkdir -p "$out"
deb="$out/vload_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
