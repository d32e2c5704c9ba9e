#!/usr/bin/env bash
# test/chroot.sh: the Debian roots that run archer's tests on PostgreSQL 17
# (Debian 13 "trixie") and 18 (Debian "sid"), made with debootstrap and
# cached, so that a second run only enters them.
#
# Usage (as root):
#   test/chroot.sh ensure PGVER [SUITES]  make the root if it is missing,
#                                        with the packages the test suites
#                                        SUITES (comma separated; default:
#                                        all) need, or add what a made
#                                        root lacks for them; print its path
#   test/chroot.sh run PGVER CMD [ARG]...  run CMD inside the root (made
#                                        with the base packages if missing)
#                                        with chroot, with /proc and /dev
#                                        (with /dev/shm, /dev/pts) mounted
#   test/chroot.sh path PGVER            print the path only
#
# PGVER is 17 or 18. Roots live in /var/cache/archer/chroot-SUITE
# (ARCHER_CHROOT_DIR overrides /var/cache/archer). The mirror is the one the
# host's own apt sources use for Debian (ARCHER_DEBIAN_MIRROR overrides it);
# the host's apt sources are never changed. A root counts as made once its
# stamp file (the packages installed) exists; an interrupted debootstrap
# or first install is started over. Concurrent runs wait on a lock per root.
#
# A cold root is made as fast as it can be: debootstrap's minbase variant,
# then only the packages the suites need, without recommends; dpkg runs
# without fsync (force-unsafe-io: a test root needs no crash safety) and
# installs no documentation, manuals or message catalogues.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() { echo "chroot.sh: $*" >&2; exit 1; }

CACHE=${ARCHER_CHROOT_DIR:-/var/cache/archer}

suite_of() {
	case "$1" in
		17) echo trixie ;;
		18) echo sid ;;
		*) die "no root for PostgreSQL '$1' (17 or 18; 15 runs on the host)" ;;
	esac
}

# What the test runner needs inside, for the suites it is to run: the
# server, its headers and PGXS (which bring clang and LLVM for the JIT
# bitcode), the extensions the tests load, the Perl TAP modules' IPC::Run,
# a compiler; then per suite: TAP reads Fashion-MNIST (with python3), fuzz
# needs clang's libFuzzer, s2oracle g++ and Google's S2 (where the Debian
# suite has it); bench (`bench/run --pg=17` or 18, not a test suite) node for its
# data generators and reports (the npm data is fetched on the host), and
# Fashion-MNIST with python3 for bench/vector.
# Nothing else: every package is time on a cold root.
# packages_of PGVER SUITES (comma separated; empty: the base only)
packages_of() {
	local v=$1 suites=",${2:-},"
	printf '%s\n' \
		"postgresql-$v" "postgresql-server-dev-$v" "postgresql-$v-postgis-3" \
		"postgresql-$v-pgvector" "postgresql-$v-pgtap" \
		libipc-run-perl build-essential make perl
	[[ $suites == *,tap,* ]] && printf '%s\n' dataset-fashion-mnist python3
	[[ $suites == *,fuzz,* ]] && printf '%s\n' clang libclang-rt-dev
	[[ $suites == *,s2oracle,* ]] && printf '%s\n' g++ "?libs2-dev"
	[[ $suites == *,bench,* ]] && printf '%s\n' nodejs dataset-fashion-mnist python3
	# (not a test suite: what test/package.sh builds the .deb with)
	[[ $suites == *,package,* ]] && printf '%s\n' dpkg-dev debhelper postgresql-server-dev-all fakeroot
	return 0
}
# (the suites that need no more than the base: regress, isolation, pgtap)
ALL_SUITES=regress,isolation,pgtap,tap,fuzz,s2oracle
# (a leading "?" marks a package installed only if the suite has it)

# The host's Debian mirror: the first URI serving a main Debian suite in
# /etc/apt/sources.list or sources.list.d (one-line or deb822 format).
host_mirror() {
	local m
	[ -n "${ARCHER_DEBIAN_MIRROR:-}" ] && { echo "$ARCHER_DEBIAN_MIRROR"; return; }
	m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' |
		grep -E '/debian/?$' | head -n 1 || true)
	if [ -z "$m" ]; then
		m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' |
			grep -E '/debian/?$' | head -n 1 || true)
	fi
	echo "${m:-http://deb.debian.org/debian}"
}

root_of() { echo "$CACHE/chroot-$(suite_of "$1")"; }

# Refuse to delete a root that still has something mounted in it: rm -rf
# would walk into the host's /dev or /proc.
mounted_under() {
	awk -v r="$1/" 'index($2 "/", r) == 1 { print $2 }' /proc/self/mounts
}

unmount_all() {
	local root=$1 mp
	# deepest first
	mounted_under "$root" | sort -r | while read -r mp; do
		umount "$mp" 2>/dev/null || umount -l "$mp"
	done
	[ -z "$(mounted_under "$root")" ] || die "could not unmount everything under $root"
}

make_root() {
	local v=$1 suites=$2 suite root mirror tmp log start=$SECONDS
	local -a pkgs=()
	suite=$(suite_of "$v")
	root=$(root_of "$v")
	mirror=$(host_mirror)
	command -v debootstrap >/dev/null 2>&1 || {
		echo "chroot.sh: installing debootstrap on the host" >&2
		DEBIAN_FRONTEND=noninteractive apt-get -qq -y -o DPkg::Lock::Timeout=600 \
			install --no-install-recommends debootstrap >/dev/null
	}
	unmount_all "$root"
	rm -rf "$root"
	tmp=$root.partial
	unmount_all "$tmp"
	rm -rf "$tmp"
	mkdir -p "$CACHE"
	log=$CACHE/debootstrap-$suite.log
	echo "chroot.sh: debootstrap $suite from $mirror into $root" >&2
	# In two stages, to configure dpkg in between: the first unpacks the
	# base system, the second (run inside it) installs it with dpkg.
	debootstrap --foreign --variant=minbase "$suite" "$tmp" "$mirror" >"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; die "debootstrap $suite failed (log: $log)"; }
	# A throwaway test root needs no crash safety: dpkg skips its fsync
	# after every file (most of the time of a cold root on a busy disk),
	# and writes no manuals, documentation or message catalogues.
	cat >"$tmp/etc/dpkg/dpkg.cfg.d/archer-test-root" <<-'EOF'
	force-unsafe-io
	path-exclude=/usr/share/doc/*
	path-exclude=/usr/share/man/*
	path-exclude=/usr/share/info/*
	path-exclude=/usr/share/locale/*/LC_MESSAGES/*.mo
	EOF
	in_own_mount_ns "$tmp" /debootstrap/debootstrap --second-stage >>"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; die "debootstrap $suite (second stage) failed (log: $log)"; }

	# sid's Release file may be past its Valid-Until date on a mirror that is
	# a snapshot; apt inside the root (only) accepts that.
	if [ "$suite" = sid ]; then
		echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99archer-valid-until"
	fi
	# no translated package descriptions: a smaller index to fetch
	echo 'Acquire::Languages "none";' >"$tmp/etc/apt/apt.conf.d/99archer-no-translations"
	echo "deb $mirror $suite main" >"$tmp/etc/apt/sources.list"
	# no services start inside the root, and installing the server makes no
	# "main" cluster: the test runner makes its own
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 755 "$tmp/usr/sbin/policy-rc.d"
	mkdir -p "$tmp/etc/postgresql-common/createcluster.d"
	echo 'create_main_cluster = false' >"$tmp/etc/postgresql-common/createcluster.d/archer.conf"

	mapfile -t pkgs < <(packages_of "$v" "$suites")
	install_packages "$v" "$tmp" "${pkgs[@]}"
	mv "$tmp" "$root"
	echo "chroot.sh: made $root in $((SECONDS - start)) s" >&2
}

# apt-get install PKG... into the root DIR of PGVER (those it has already
# cost nothing) and add them to its stamp file
install_packages() {
	local v=$1 dir=$2 suite rc=0 log
	shift 2
	suite=$(suite_of "$v")
	log=$CACHE/install-$suite.log
	echo "chroot.sh: installing $* in $suite" >&2
	with_mounts "$dir" env DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 sh -c '
		apt-get -q -y update || exit 1
		want=""
		for p in "$@"; do
			case "$p" in
				"?"*) apt-cache show "${p#?}" >/dev/null 2>&1 && want="$want ${p#?}" ;;
				*) want="$want $p" ;;
			esac
		done
		apt-get -q -y -o Dpkg::Use-Pty=0 install --no-install-recommends $want &&
		apt-get clean' sh "$@" >"$log" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		tail -n 30 "$log" >&2
		die "installing packages in $suite failed (log: $log)"
	fi
	{ cat "$dir/.archer-chroot-packages" 2>/dev/null || true; printf '%s\n' "$@"; } | sort -u \
		>"$dir/.archer-chroot-packages.new"
	mv "$dir/.archer-chroot-packages.new" "$dir/.archer-chroot-packages"
}

# ensure PGVER SUITES: the root exists and has the packages of SUITES (a
# root made for other suites gets what they lack added)
ensure() {
	local v=$1 suites=$2 root lock
	local -a missing=()
	root=$(root_of "$v")
	mkdir -p "$CACHE"
	lock=$CACHE/chroot-$(suite_of "$v").lock
	exec 9>"$lock"
	flock 9
	if ! [ -f "$root/.archer-chroot-packages" ]; then
		make_root "$v" "$suites"
	else
		mapfile -t missing < <(comm -23 <(packages_of "$v" "$suites" | sort -u) \
			<(sort -u "$root/.archer-chroot-packages"))
		[ "${#missing[@]}" = 0 ] || install_packages "$v" "$root" "${missing[@]}"
	fi
	flock -u 9
	exec 9>&-
}

# in_own_mount_ns ROOT CMD...: run CMD inside ROOT (chroot) in a mount
# namespace of its own, with nothing mounted for it: what it mounts itself
# (debootstrap's second stage: /proc, /sys) vanishes with the namespace.
in_own_mount_ns() {
	local root=$1
	shift
	unshare --mount --propagation private -- chroot "$root" "$@"
}

# with_mounts ROOT CMD...: run CMD inside ROOT with /proc, and the host's
# /dev (with /dev/shm for PostgreSQL's shared memory, /dev/pts) mounted. The
# mounts are made in a mount namespace of CMD's own (unshare), so they
# vanish with it however it ends, are never seen by the host (rm -rf of a
# root cannot walk into /dev), and concurrent runs in one root do not
# unmount each other's. /etc/resolv.conf is copied in for apt.
with_mounts() {
	local root=$1
	shift
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	unshare --mount --propagation private -- sh -c '
		root=$1
		shift
		mount -t proc proc "$root/proc" &&
			mount --rbind /dev "$root/dev" &&
			exec chroot "$root" "$@"' sh "$root" "$@"
}

[ $# -ge 1 ] || { usage >&2; exit 2; }
cmd=$1
shift
case "$cmd" in
	-h|--help) usage; exit 0 ;;
	path) [ $# = 1 ] || die "usage: path PGVER"; root_of "$1" ;;
	ensure)
		[ $# = 1 ] || [ $# = 2 ] || die "usage: ensure PGVER [SUITES]"
		[ "$(id -u)" = 0 ] || die "must run as root"
		ensure "$1" "${2-$ALL_SUITES}"
		root_of "$1" ;;
	run)
		[ $# -ge 2 ] || die "usage: run PGVER CMD..."
		[ "$(id -u)" = 0 ] || die "must run as root"
		v=$1
		shift
		ensure "$v" ""
		with_mounts "$(root_of "$v")" "$@" ;;
	*) usage >&2; exit 2 ;;
esac
