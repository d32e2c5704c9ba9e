#!/usr/bin/env bash
# test/package.sh: build the Debian packages of debian/ and test them.
#
# Usage: sudo bash test/package.sh [--pg=LIST] [--no-install-test] [--no-build] [--out=DIR]
#
#   --pg=LIST          the PostgreSQL versions to package, comma separated
#                      (15, 17, 18, or all); default 15, this host's.
#                      postgresql-17-archer is built in test/chroot.sh's
#                      Debian 13 root and postgresql-18-archer in its sid
#                      root (run there as this script with --in-root), and
#                      each is installed into a clean root of its Debian
#                      suite (Debian 13 with postgresql-17, sid with
#                      postgresql-18, cached in /var/cache/archer/pkgtest-SUITE)
#                      for the smoke test below; DIR/VERSION holds each
#                      version's packages and logs
#   --no-install-test  only build and check the packages
#   --no-build         check and test the packages already built in DIR
#                      (one version only)
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
INSTALL_TEST=1 BUILD=1 OUT="" PGVERS=15 IN_ROOT=0
for arg in "$@"; do
	case "$arg" in
		--no-install-test) INSTALL_TEST=0 ;;
		--no-build) BUILD=0 ;;
		--out=*) OUT=${arg#*=} ;;
		--pg=*) PGVERS=${arg#*=}; [ "$PGVERS" = all ] && PGVERS=15,17,18 ;;
		# (internal: this script inside a root of test/chroot.sh)
		--in-root) IN_ROOT=1 ;;
		-h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
		*) echo "package.sh: unknown argument: $arg" >&2; exit 2 ;;
	esac
done
fail() { echo "package: FAILED: $*"; exit 1; }
say() { printf '%s\n' "$*"; }
for v in ${PGVERS//,/ }; do
	case "$v" in
		15|17|18) ;;
		*) fail "--pg=$PGVERS: the versions are 15, 17 and 18" ;;
	esac
done

# The files of the work tree to package (NUL separated, relative to ROOT):
# tracked and untracked-not-ignored ones, or, in a copy without .git (the
# one made in a root), all of them; no build or test outputs.
list_tree() {
	if git -c safe.directory="$ROOT" -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -c safe.directory="$ROOT" -C "$ROOT" ls-files -z --cached --others --exclude-standard
	else
		(cd "$ROOT" && find . -name .git -prune -o \( -type f -o -type l \) -print0 | sed -z 's|^\./||')
	fi | grep -zEv '^(bench/results|tmp_check|results)/|\.(o|so|bc)$' |
		while IFS= read -r -d '' f; do [ -e "$ROOT/$f" ] && printf '%s\0' "$f"; done
}
suite_name() {
	case "$1" in 15) echo 12 ;; 17) echo 13 ;; 18) echo sid ;; esac
}

CACHE=/var/cache/archer
# install_test PGVER DEB: installs DEB with dpkg into a fresh copy of a
# clean root of PGVER's Debian suite (debootstrap'ed once with only
# postgresql-PGVER, cached in $CACHE/pkgtest-SUITE; needs root and
# deb.debian.org the first time) and runs the autopkgtest debian/tests/smoke
# there: CREATE EXTENSION archer and queries through both access methods in
# a throwaway cluster. Its output goes to $OUT/smoke.log.
install_test() {
	local v=$1 deb=$2 suite base run
	local -a sources=()
	case "$v" in
		15) suite=bookworm sources=("bookworm main" "bookworm-updates main" "security:bookworm-security main") ;;
		17) suite=trixie sources=("trixie main" "trixie-updates main" "security:trixie-security main") ;;
		18) suite=sid sources=("sid main") ;;
	esac
	[ "$(id -u)" = 0 ] || fail "the install test needs root (debootstrap, chroot)"
	command -v debootstrap >/dev/null || fail "no debootstrap"
	base=$CACHE/pkgtest-$suite
	mkdir -p "$CACHE"
	exec 9>"$CACHE/pkgtest-$suite.lock"
	flock 9
	if [ ! -f "$base/.archer-complete" ]; then
		say "making the clean Debian $suite root $base (debootstrap, postgresql-$v; once)"
		if [ ! -f "$base/.archer-debootstrapped" ]; then
			rm -rf "$base"
			debootstrap --variant=minbase "$suite" "$base" http://deb.debian.org/debian \
				>"$CACHE/pkgtest-$suite.log" 2>&1 ||
				{ tail -n 30 "$CACHE/pkgtest-$suite.log"; fail "debootstrap failed"; }
			touch "$base/.archer-debootstrapped"
		fi
		# the root's own suites (never the host's): the package depends on the
		# current minor release, which may come through the security suite
		local src
		for src in "${sources[@]}"; do
			case "$src" in
				security:*) echo "deb http://deb.debian.org/debian-security ${src#security:}" ;;
				*) echo "deb http://deb.debian.org/debian $src" ;;
			esac
		done >"$base/etc/apt/sources.list"
		# sid's Release file may be past its Valid-Until date (a snapshot)
		[ "$suite" = sid ] &&
			echo 'Acquire::Check-Valid-Until "false";' >"$base/etc/apt/apt.conf.d/99archer-valid-until"
		# packages' maintainer scripts start no services in the root
		printf '#!/bin/sh\nexit 101\n' >"$base/usr/sbin/policy-rc.d"
		chmod +x "$base/usr/sbin/policy-rc.d"
		if ! unshare --mount --propagation private -- sh -c '
			mount -t proc proc "$1/proc" &&
			exec chroot "$1" env DEBIAN_FRONTEND=noninteractive sh -c "apt-get -qq update &&
				apt-get -qq -y install --no-install-recommends postgresql-$2 && apt-get clean"' \
			sh "$base" "$v" >>"$CACHE/pkgtest-$suite.log" 2>&1; then
			tail -n 30 "$CACHE/pkgtest-$suite.log"
			fail "installing postgresql-$v into $base failed"
		fi
		touch "$base/.archer-complete"
	fi
	flock -u 9
	exec 9>&-

	run=$(mktemp -d "$CACHE/pkgtest-run.XXXXXX")
	cp -a "$base/." "$run/"
	cp "$deb" "$run/tmp/"
	mkdir -p "$run/tmp/archer"
	cp -a "$ROOT/debian" "$run/tmp/archer/"
	say "installing $(basename "$deb") into a copy of $base"
	# in a mount namespace of its own: /proc and /dev/shm vanish with it
	local rc=0
	unshare --mount --propagation private -- sh -c '
		mount -t proc proc "$1/proc" && mount -t tmpfs -o size=256m tmpfs "$1/dev/shm" || exit 1
		chroot "$1" dpkg -i "/tmp/$2" || { echo "dpkg -i $2 failed in the clean root"; exit 1; }
		# debian/tests/smoke (the autopkgtest) in the root: a throwaway cluster
		# (pg_virtualenv), CREATE EXTENSION archer, queries checked against a
		# sequential scan, both verify functions
		exec chroot "$1" sh -c "cd /tmp/archer && debian/tests/smoke"' \
		sh "$run" "$(basename "$deb")" >"$OUT/smoke.log" 2>&1 || rc=$?
	# never remove a root something is still mounted in
	grep -q " $run/" /proc/mounts || rm -rf "$run"
	if [ "$rc" != 0 ]; then
		tail -n 40 "$OUT/smoke.log"
		fail "the install test of $(basename "$deb") failed in the clean root (log: $OUT/smoke.log)"
	fi
	grep -E 'NOTICE: +archer' "$OUT/smoke.log" | sed 's/^/in the clean root: /'
	grep -qE "NOTICE: +archer $version:" "$OUT/smoke.log" ||
		fail "debian/tests/smoke printed no result for archer $version"
}

# --- 17 and 18: built in test/chroot.sh's root, installed into a clean one ------
if [ "$IN_ROOT" = 0 ] && [ "$PGVERS" != 15 ]; then
	[ "$BUILD" = 1 ] || fail "--no-build takes one version, --pg=15"
	[ "$(id -u)" = 0 ] || fail "--pg=$PGVERS needs root (debootstrap, chroot)"
	if [ "$INSTALL_TEST" = 1 ] && ! command -v debootstrap >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get -qq -y -o DPkg::Lock::Timeout=600 install \
			--no-install-recommends debootstrap >/dev/null || fail "apt-get install debootstrap failed"
	fi
	[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/archer-pkg.XXXXXX)
	mkdir -p "$OUT"
	OUT=$(cd "$OUT" && pwd)
	version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$ROOT/archer.control")
	top=$OUT
	for v in ${PGVERS//,/ }; do
		say "=== postgresql-$v-archer"
		OUT=$top/$v
		mkdir -p "$OUT"
		if [ "$v" = 15 ]; then
			a=(--pg=15 --out="$OUT")
			[ "$INSTALL_TEST" = 1 ] || a+=(--no-install-test)
			bash "$0" "${a[@]}" || exit 1
			continue
		fi
		# the build root: test/chroot.sh's, with the packaging tools added
		croot=$(bash "$ROOT/test/chroot.sh" ensure "$v" package) || fail "no root for PostgreSQL $v"
		inside=$(mktemp -d "$croot/tmp/archer-pkg.XXXXXX")
		mkdir -p "$inside/src"
		list_tree | tar -C "$ROOT" --null -T - -cf - | tar -C "$inside/src" -xf -
		rc=0
		bash "$ROOT/test/chroot.sh" run "$v" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 PG_SUPPORTED_VERSIONS="$v" \
			bash "/${inside#"$croot"/}/src/test/package.sh" --in-root --no-install-test \
			--out="/${inside#"$croot"/}/out" </dev/null || rc=$?
		cp -a "$inside/out/." "$OUT/" 2>/dev/null
		rm -rf "$inside"
		[ "$rc" = 0 ] || fail "building postgresql-$v-archer in $croot failed (logs: $OUT)"
		if [ "$INSTALL_TEST" = 1 ]; then
			install_test "$v" "$(ls "$OUT"/postgresql-"$v"-archer_"$version"_*.deb | head -n 1)"
			say "package: OK (postgresql-$v-archer $version installs into a clean Debian $(suite_name "$v") root and answers)"
		fi
	done
	say "package: OK (postgresql-{${PGVERS}}-archer $version)"
	exit 0
fi

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
	list_tree | tar -C "$ROOT" --null -T - -cf - | tar -C "$src" -xf -
	# (test/package.sh --pg=17 sets it to the version to build in its root)
	export PG_SUPPORTED_VERSIONS=${PG_SUPPORTED_VERSIONS:-installed}
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
grep -E '^(gcc|cc|x86_64-linux-gnu-gcc)\b.* -c .*src/([a-z]+/)?[a-z_0-9]+\.c' "$OUT/build.log" >"$OUT/gcc.lines" ||
	fail "no gcc compile lines in the build log"
grep -E 'clang.* -emit-llvm .*src/([a-z]+/)?[a-z_0-9]+\.c' "$OUT/build.log" >"$OUT/clang.lines" ||
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
	for bc in "$x"/usr/lib/postgresql/"$v"/lib/bitcode/archer/src/*.bc "$x"/usr/lib/postgresql/"$v"/lib/bitcode/archer/src/*/*.bc; do
		if "$llvm_dis" -o - "$bc" | grep -q 'call.*@llvm\.fmuladd'; then
			fail "$(basename "$bc") of $deb has fused multiply-adds: the JIT would compute other results"
		fi
	done
	dpkg-deb -f "$deb" Depends | sed "s/^/postgresql-$v-archer depends on: /"
	say "postgresql-$v-archer: library, bitcode (no fused multiply-add), control files, $(echo "$scripts" | wc -w) scripts"
done

[ "$INSTALL_TEST" = 1 ] || { say "package: OK (built and checked; install test not run)"; exit 0; }

# --- install into a clean Debian 12 root --------------------------------------------
case " $versions " in
	*" 15 "*) ;;
	*) fail "the install test needs postgresql-15-archer (Debian 12's PostgreSQL)" ;;
esac
install_test 15 "$(ls "$OUT"/postgresql-15-archer_"$version"_*.deb | head -n 1)"
say "package: OK (postgresql-15-archer $version installs into a clean Debian 12 root and answers)"
