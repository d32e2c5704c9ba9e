#!/usr/bin/env bash
# test/chroot.sh: the Debian roots that run archer's tests on PostgreSQL 17
# (Debian 13 "trixie") and 18 (Debian "sid"), made with debootstrap and
# cached, so that a second run only enters them.
#
# Usage (as root):
#   test/chroot.sh ensure PGVER          make the root if it is missing or
#                                        incomplete; print its path
#   test/chroot.sh run PGVER CMD [ARG]...  ensure, then run CMD inside with
#                                        chroot, with /proc and /dev (with
#                                        /dev/shm, /dev/pts) mounted for it
#   test/chroot.sh path PGVER            print the path only
#
# PGVER is 17 or 18. Roots live in /var/cache/archer/chroot-SUITE
# (ARCHER_CHROOT_DIR overrides /var/cache/archer). The mirror is the one the
# host's own apt sources use for Debian (ARCHER_DEBIAN_MIRROR overrides it);
# the host's apt sources are never changed. A root counts as made when its
# stamp file lists exactly the packages below; an interrupted debootstrap
# or install is started over. Concurrent runs wait on a lock per root.
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

# What the test runner needs inside: the server, its headers and PGXS, the
# extensions the tests load, the Perl TAP modules' IPC::Run, a compiler.
# trixie also gets what the fuzz, s2oracle (Google's S2, which trixie does
# not have) and TAP (Fashion-MNIST) suites need, since CI runs the whole
# default suite there, and node for `bench/run --pg=17` (its data
# generators and reports; the npm data is fetched on the host); sid runs
# build + pg_regress + pgTAP.
packages_of() {
	local v=$1
	local -a p=(
		"postgresql-$v" "postgresql-server-dev-$v" "postgresql-$v-postgis-3"
		"postgresql-$v-pgvector" "postgresql-$v-pgtap"
		libipc-run-perl build-essential make perl
	)
	if [ "$v" = 17 ]; then
		p+=(g++ clang libclang-rt-dev "?libs2-dev" dataset-fashion-mnist python3 nodejs)
	fi
	printf '%s\n' "${p[@]}"
}
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
	local v=$1 suite root mirror tmp
	suite=$(suite_of "$v")
	root=$(root_of "$v")
	mirror=$(host_mirror)
	command -v debootstrap >/dev/null 2>&1 || {
		echo "chroot.sh: installing debootstrap on the host" >&2
		DEBIAN_FRONTEND=noninteractive apt-get -qq -y install --no-install-recommends debootstrap >/dev/null
	}
	unmount_all "$root"
	rm -rf "$root"
	tmp=$root.partial
	unmount_all "$tmp"
	rm -rf "$tmp"
	mkdir -p "$CACHE"
	echo "chroot.sh: debootstrap $suite from $mirror into $root" >&2
	debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >"$CACHE/debootstrap-$suite.log" 2>&1 ||
		{ tail -n 30 "$CACHE/debootstrap-$suite.log" >&2; die "debootstrap $suite failed (log: $CACHE/debootstrap-$suite.log)"; }

	# sid's Release file may be past its Valid-Until date on a mirror that is
	# a snapshot; apt inside the root (only) accepts that.
	if [ "$suite" = sid ]; then
		echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99archer-valid-until"
	fi
	echo "deb $mirror $suite main" >"$tmp/etc/apt/sources.list"
	# no services start inside the root, and installing the server makes no
	# "main" cluster: the test runner makes its own
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 755 "$tmp/usr/sbin/policy-rc.d"
	mkdir -p "$tmp/etc/postgresql-common/createcluster.d"
	echo 'create_main_cluster = false' >"$tmp/etc/postgresql-common/createcluster.d/archer.conf"

	install_packages "$v" "$tmp"
	mv "$tmp" "$root"
}

# apt-get install the packages of PGVER into the root DIR (those it has
# already cost nothing) and record them in its stamp file
install_packages() {
	local v=$1 dir=$2 suite rc=0
	local -a pkgs=()
	suite=$(suite_of "$v")
	mapfile -t pkgs < <(packages_of "$v")
	echo "chroot.sh: installing ${pkgs[*]} in $suite" >&2
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
		apt-get clean' sh "${pkgs[@]}" >"$CACHE/install-$suite.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		tail -n 30 "$CACHE/install-$suite.log" >&2
		die "installing packages in $suite failed (log: $CACHE/install-$suite.log)"
	fi
	packages_of "$v" >"$dir/.archer-chroot-packages"
}

ensure() {
	local v=$1 root lock
	root=$(root_of "$v")
	mkdir -p "$CACHE"
	lock=$CACHE/chroot-$(suite_of "$v").lock
	exec 9>"$lock"
	flock 9
	if ! [ -f "$root/.archer-chroot-packages" ]; then
		make_root "$v"
	elif ! cmp -s "$root/.archer-chroot-packages" <(packages_of "$v"); then
		# a made root whose package list changed since: add what is new
		install_packages "$v" "$root"
	fi
	flock -u 9
	exec 9>&-
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
		[ $# = 1 ] || die "usage: ensure PGVER"
		[ "$(id -u)" = 0 ] || die "must run as root"
		ensure "$1"
		root_of "$1" ;;
	run)
		[ $# -ge 2 ] || die "usage: run PGVER CMD..."
		[ "$(id -u)" = 0 ] || die "must run as root"
		v=$1
		shift
		ensure "$v"
		with_mounts "$(root_of "$v")" "$@" ;;
	*) usage >&2; exit 2 ;;
esac
