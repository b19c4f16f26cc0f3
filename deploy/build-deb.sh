#!/usr/bin/env bash
# deploy/build-deb.sh: builds a Debian package of intake with dpkg-deb, without the network:
# /usr/bin/intake, the systemd unit, the default configuration /etc/intake/intake.yaml (a
# conffile), the docs and the Grafana dashboard, and maintainer scripts that create the
# intake user (docs/deploy.md). It prints the package's path.
#
#   deploy/build-deb.sh [--binary FILE] [--version VERSION] [--out DIR]
#
# --binary packages a built intake instead of running go build (GOPROXY=off: the modules
# must be in the module cache); --version defaults to 0~git<commit date>.<commit>;
# --out defaults to the current directory.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
binary= version= out=$PWD
while (($#)); do
	case $1 in
	--binary) binary=$2; shift 2 ;;
	--version) version=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "build-deb.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
command -v dpkg-deb >/dev/null || { echo "build-deb.sh: dpkg-deb is missing (Debian package dpkg)" >&2; exit 1; }

if [[ -z $version ]]; then
	version=0~git$(git -C "$root" log -1 --format=%cd.%h --date=format:%Y%m%d 2>/dev/null || date +%Y%m%d)
fi
goarch=$(go env GOARCH 2>/dev/null || dpkg --print-architecture)
case $goarch in
amd64 | arm64 | riscv64 | ppc64le | s390x) arch=$goarch ;;
386) arch=i386 ;;
arm) arch=armhf ;;
*) echo "build-deb.sh: no Debian architecture for GOARCH $goarch" >&2; exit 1 ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/intake
install -d "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/lib/systemd/system" "$pkg/etc/intake" \
	"$pkg/usr/share/doc/intake/docs" "$pkg/usr/share/intake/grafana"
if [[ -n $binary ]]; then
	install -m 0755 "$binary" "$pkg/usr/bin/intake"
else
	(cd "$root" && GOPROXY=off go build -trimpath -o "$pkg/usr/bin/intake" ./cmd/intake)
fi
install -m 0644 "$root/deploy/intake.service" "$pkg/usr/lib/systemd/system/intake.service"
install -m 0644 "$root/deploy/intake.yaml" "$pkg/etc/intake/intake.yaml"
# The docs keep their layout, so that their links (../README.md) hold.
install -m 0644 "$root/README.md" "$pkg/usr/share/doc/intake/"
install -m 0644 "$root"/docs/*.md "$pkg/usr/share/doc/intake/docs/"
install -m 0644 "$root/grafana/intake-influxdb.json" "$pkg/usr/share/intake/grafana/"
cat >"$pkg/usr/share/doc/intake/copyright" <<'TEXT'
intake: an INT telemetry collector. The sources, with their history, are the repository this
package was built from; the papers it implements are cited in README.md.
TEXT
for script in postinst prerm postrm; do
	install -m 0755 "$root/deploy/debian/$script" "$pkg/DEBIAN/$script"
done
echo /etc/intake/intake.yaml >"$pkg/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat >"$pkg/DEBIAN/control" <<TEXT
Package: intake
Version: $version
Architecture: $arch
Maintainer: intake maintainers <intake@localhost>
Depends: libc6, passwd
Installed-Size: $size
Section: net
Priority: optional
Description: In-band Network Telemetry (INT) collector
 intake receives INT telemetry reports (v0.5, v1.0, v2.0), DTA reports and INT-label
 exports from switches, keeps per-flow and per-hop state, detects events, and exports to
 InfluxDB, Prometheus, Redis and Kafka; an HTTP API and a web console show the fabric.
 Runs as the systemd service intake (hardened; docs in /usr/share/doc/intake).
TEXT
mkdir -p "$out"
deb=$out/intake_${version}_$arch.deb
dpkg-deb --root-owner-group -Zgzip -z1 --build "$pkg" "$deb" >/dev/null
echo "$deb"
