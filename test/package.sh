#!/usr/bin/env bash
# test/package.sh: build the Debian packages of debian/ and test them.
#
# Usage: sudo bash test/package.sh [--no-install-test] [--no-build] [--out=DIR]
#
#   --no-install-test  only build and check the packages
#   --no-build         check and test the packages already built in DIR
#   --out=DIR          where the copy of the tree, the build log and the .debs
#                      go (default: a new /tmp/archer-pkg.XXXXXX, kept)
#
# 1. Copies the work tree (tracked and untracked-not-ignored files) to
#    DIR/archer-VERSION, makes debian/control for the PostgreSQL versions of
#    debian/pgversions that are installed here (PG_SUPPORTED_VERSIONS=
#    installed: postgresql-15-archer on Debian 12, -17 and -18 where those
#    servers are installed) and runs dpkg-buildpackage -us -uc -b.
# 2. Checks: the version is the same in debian/changelog, archer.control, the
#    Makefile and META.json; each package holds the library, the JIT bitcode,
#    the control files and every install and update script; the compiler
#    lines of the build carry no bare -Werror and -ffp-contract=off reaches
#    both gcc and clang (the bitcode holds no fused multiply-add).
# 3. Unless --no-install-test: installs postgresql-15-archer with dpkg into a
#    fresh copy of a clean Debian 12 root (debootstrap'ed once with
#    postgresql-15 and cached in /var/cache/archer/pkgtest-bookworm; needs
#    root and deb.debian.org the first time) and runs the autopkgtest
#    debian/tests/smoke there: CREATE EXTENSION archer and queries through
#    both access methods in a throwaway cluster.
# Ends with "package: OK" or a line starting "package: FAILED".
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
INSTALL_TEST=1 BUILD=1 OUT=""
for arg in "$@"; do
	case "$arg" in
		--no-install-test) INSTALL_TEST=0 ;;
		--no-build) BUILD=0 ;;
		--out=*) OUT=${arg#*=} ;;
		-h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
		*) echo "package.sh: unknown argument: $arg" >&2; exit 2 ;;
	esac
done
fail() { echo "package: FAILED: $*"; exit 1; }
say() { printf '%s\n' "$*"; }

# --- build dependencies -------------------------------------------------------
need=()
command -v dpkg-buildpackage >/dev/null || need+=(dpkg-dev)
command -v dh >/dev/null || need+=(debhelper)
command -v pg_buildext >/dev/null || need+=(postgresql-server-dev-all)
command -v fakeroot >/dev/null || need+=(fakeroot)
if [ "$INSTALL_TEST" = 1 ] && ! command -v debootstrap >/dev/null; then need+=(debootstrap); fi
if [ "${#need[@]}" != 0 ]; then
	[ "$(id -u)" = 0 ] || fail "missing ${need[*]}; run as root"
	say "installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -qq -y -o DPkg::Lock::Timeout=600 install \
		--no-install-recommends "${need[@]}" >/dev/null || fail "apt-get install ${need[*]} failed"
fi

# --- one version everywhere -----------------------------------------------------
cd "$ROOT"
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
control_version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" archer.control)
make_version=$(sed -n 's/^EXTVERSION = //p' Makefile)
meta_version=$(perl -MJSON::PP -0777 -ne 'my $m = decode_json($_); print $m->{version}, " ", $m->{provides}{archer}{version}' META.json)
[ "$control_version" = "$version" ] || fail "debian/changelog says $version, archer.control $control_version"
[ "$make_version" = "$version" ] || fail "debian/changelog says $version, the Makefile's EXTVERSION $make_version"
[ "$meta_version" = "$version $version" ] || fail "debian/changelog says $version, META.json '$meta_version'"
say "version $version in debian/changelog, archer.control, Makefile and META.json"

# --- build ----------------------------------------------------------------------
if [ "$BUILD" = 0 ]; then
	[ -n "$OUT" ] && [ -f "$OUT/build.log" ] || fail "--no-build needs --out=DIR of an earlier build"
fi
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/archer-pkg.XXXXXX)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
src=$OUT/archer-$version
if [ "$BUILD" = 1 ]; then
	rm -rf "$src"
	mkdir -p "$src"
	git -c safe.directory="$ROOT" ls-files -z --cached --others --exclude-standard |
		grep -zEv '^(bench/results|tmp_check|results)/|\.(o|so|bc)$' |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf - | tar -C "$src" -xf -
	export PG_SUPPORTED_VERSIONS=installed
	(cd "$src" && pg_buildext updatecontrol) || fail "pg_buildext updatecontrol failed"
	versions=$(sed -n 's/^Package: postgresql-\([0-9]*\)-archer$/\1/p' "$src/debian/control" | xargs)
	[ -n "$versions" ] || fail "no PostgreSQL version of debian/pgversions is installed"
	say "building postgresql-{$(echo "$versions" | tr ' ' ,)}-archer in $src (log: $OUT/build.log)"
	start=$(date +%s)
	(cd "$src" && dpkg-buildpackage -us -uc -b) >"$OUT/build.log" 2>&1 ||
		{ tail -n 60 "$OUT/build.log"; fail "dpkg-buildpackage failed (log: $OUT/build.log)"; }
	say "built in $(( $(date +%s) - start ))s:"
fi
versions=$(sed -n 's/^Package: postgresql-\([0-9]*\)-archer$/\1/p' "$src/debian/control" | xargs)
ls -l "$OUT"/*.deb

# --- check the packages -----------------------------------------------------------
grep -E '^(gcc|cc|x86_64-linux-gnu-gcc)\b.* -c .*src/[a-z_0-9]+\.c' "$OUT/build.log" >"$OUT/gcc.lines" ||
	fail "no gcc compile lines in the build log"
grep -E 'clang.* -emit-llvm .*src/[a-z_0-9]+\.c' "$OUT/build.log" >"$OUT/clang.lines" ||
	fail "no clang (bitcode) compile lines in the build log"
if grep -qE -- '-Werror( |$)' "$OUT/gcc.lines" "$OUT/clang.lines"; then
	fail "a compile line carries -Werror: $(grep -m1 -E -- '-Werror( |$)' "$OUT/gcc.lines" "$OUT/clang.lines")"
fi
for kind in gcc clang; do
	if grep -qv -- '-ffp-contract=off' "$OUT/$kind.lines"; then
		fail "a $kind compile line lacks -ffp-contract=off: $(grep -m1 -v -- '-ffp-contract=off' "$OUT/$kind.lines")"
	fi
done
say "compile lines: $(wc -l <"$OUT/gcc.lines") gcc, $(wc -l <"$OUT/clang.lines") clang; no -Werror, all -ffp-contract=off"

scripts=$(cd sql/install && ls -- *.sql)
for v in $versions; do
	deb=$(ls "$OUT"/postgresql-"$v"-archer_"$version"_*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || fail "no postgresql-$v-archer package"
	x=$OUT/contents-$v
	rm -rf "$x"
	dpkg-deb -x "$deb" "$x"
	for f in usr/lib/postgresql/$v/lib/archer.so usr/lib/postgresql/$v/lib/bitcode/archer.index.bc \
		usr/share/postgresql/$v/extension/archer.control \
		usr/share/postgresql/$v/extension/archer_postgis.control; do
		[ -f "$x/$f" ] || fail "$deb has no $f"
	done
	for s in $scripts; do
		[ -f "$x/usr/share/postgresql/$v/extension/$s" ] || fail "$deb has no extension/$s"
	done
	llvm_dis=$(ls /usr/lib/llvm-*/bin/llvm-dis 2>/dev/null | sort -V | tail -n 1)
	[ -n "$llvm_dis" ] || fail "no llvm-dis to read the bitcode"
	for bc in "$x"/usr/lib/postgresql/"$v"/lib/bitcode/archer/src/*.bc; do
		if "$llvm_dis" -o - "$bc" | grep -q 'call.*@llvm\.fmuladd'; then
			fail "$(basename "$bc") of $deb has fused multiply-adds: the JIT would compute other results"
		fi
	done
	dpkg-deb -f "$deb" Depends | sed "s/^/postgresql-$v-archer depends on: /"
	say "postgresql-$v-archer: library, bitcode (no fused multiply-add), control files, $(echo "$scripts" | wc -w) scripts"
done

[ "$INSTALL_TEST" = 1 ] || { say "package: OK (built and checked; install test not run)"; exit 0; }

# --- install into a clean Debian 12 root --------------------------------------------
[ "$(id -u)" = 0 ] || fail "the install test needs root (debootstrap, chroot)"
case " $versions " in
	*" 15 "*) ;;
	*) fail "the install test needs postgresql-15-archer (Debian 12's PostgreSQL)" ;;
esac
CACHE=/var/cache/archer
BASE=$CACHE/pkgtest-bookworm
mkdir -p "$CACHE"
exec 9>"$CACHE/pkgtest-bookworm.lock"
flock 9
if [ ! -f "$BASE/.archer-complete" ]; then
	say "making the clean Debian 12 root $BASE (debootstrap, postgresql-15; once)"
	if [ ! -f "$BASE/.archer-debootstrapped" ]; then
		rm -rf "$BASE"
		debootstrap --variant=minbase bookworm "$BASE" http://deb.debian.org/debian \
			>"$CACHE/pkgtest-bookworm.log" 2>&1 ||
			{ tail -n 30 "$CACHE/pkgtest-bookworm.log"; fail "debootstrap failed"; }
		touch "$BASE/.archer-debootstrapped"
	fi
	# the root's own suites (never the host's): the package depends on the
	# current minor release, which comes through bookworm-security
	cat >"$BASE/etc/apt/sources.list" <<-'EOF'
	deb http://deb.debian.org/debian bookworm main
	deb http://deb.debian.org/debian bookworm-updates main
	deb http://deb.debian.org/debian-security bookworm-security main
	EOF
	# packages' maintainer scripts start no services in the root
	printf '#!/bin/sh\nexit 101\n' >"$BASE/usr/sbin/policy-rc.d"
	chmod +x "$BASE/usr/sbin/policy-rc.d"
	mount -t proc proc "$BASE/proc"
	if ! chroot "$BASE" env DEBIAN_FRONTEND=noninteractive sh -c \
		'apt-get -qq update && apt-get -qq -y install --no-install-recommends postgresql-15' \
		>>"$CACHE/pkgtest-bookworm.log" 2>&1; then
		umount "$BASE/proc"
		tail -n 30 "$CACHE/pkgtest-bookworm.log"
		fail "installing postgresql-15 into $BASE failed"
	fi
	umount "$BASE/proc"
	chroot "$BASE" apt-get clean
	touch "$BASE/.archer-complete"
fi

RUN=$(mktemp -d "$CACHE/pkgtest-run.XXXXXX")
cleanup() {
	for m in dev/shm proc; do mountpoint -q "$RUN/$m" && umount "$RUN/$m"; done
	# never remove a root something is still mounted in
	if ! grep -q " $RUN/" /proc/mounts; then rm -rf "$RUN"; fi
}
trap cleanup EXIT
cp -a "$BASE/." "$RUN/"
mount -t proc proc "$RUN/proc"
mount -t tmpfs -o size=256m tmpfs "$RUN/dev/shm"
deb=$(ls "$OUT"/postgresql-15-archer_"$version"_*.deb | head -n 1)
cp "$deb" "$RUN/tmp/"
say "installing $(basename "$deb") into a copy of $BASE"
chroot "$RUN" dpkg -i "/tmp/$(basename "$deb")" || fail "dpkg -i $(basename "$deb") failed in the clean root"
# debian/tests/smoke (the autopkgtest) in the root: a throwaway cluster
# (pg_virtualenv), CREATE EXTENSION archer, queries checked against a
# sequential scan, both verify functions
mkdir -p "$RUN/tmp/archer"
cp -a "$ROOT/debian" "$RUN/tmp/archer/"
chroot "$RUN" sh -c 'cd /tmp/archer && debian/tests/smoke' >"$OUT/smoke.log" 2>&1 ||
	{ tail -n 40 "$OUT/smoke.log"; fail "debian/tests/smoke failed in the clean root (log: $OUT/smoke.log)"; }
grep -E 'NOTICE: +archer' "$OUT/smoke.log" | sed 's/^/in the clean root: /'
grep -qE "NOTICE: +archer $version:" "$OUT/smoke.log" || fail "debian/tests/smoke printed no result for archer $version"
say "package: OK (postgresql-15-archer $version installs into a clean Debian 12 root and answers)"
