#!/usr/bin/env bash
# test/build-old.sh: build the released archer 0.1.0 (the code of commit
# c24a24d) into a copy of the PostgreSQL install, for the upgrade test
# test/t/027_upgrade_from_0_1_0.pl.
#
# Usage: bash test/build-old.sh DEST
#
# DEST must not exist yet.  Checks out the commit in a git worktree
# (DEST/src; fetched from origin if a shallow clone lacks it), builds it
# against $PG_CONFIG, copies that PostgreSQL install (bin, lib, share) to
# DEST/pg with every archer file of it replaced by the old build's, and
# removes the worktree.  The copy is relocatable: its own pg_config, initdb
# and postgres find its lib and share directories.  Prints the copy's
# pg_config on the last line; the test reads it from ARCHER_OLD_PG_CONFIG.
# test/run does all this itself (as root, in the repo) before the TAP suite.
#
# Environment:
#   PG_CONFIG          default /usr/lib/postgresql/15/bin/pg_config
#   ARCHER_OLD_COMMIT  default c24a24d7a565ef261a586119a45b56994a768439 (0.1.0)
set -euo pipefail

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
COMMIT=${ARCHER_OLD_COMMIT:-c24a24d7a565ef261a586119a45b56994a768439}
die() { echo "build-old: $*" >&2; exit 1; }

[ $# = 1 ] || die "usage: test/build-old.sh DEST"
DEST=$1
[ -e "$DEST" ] && die "$DEST exists"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
g=(git -c safe.directory="$ROOT" -C "$ROOT")

"${g[@]}" rev-parse --git-dir >/dev/null 2>&1 || die "$ROOT is not a git checkout: cannot check out $COMMIT"
if ! "${g[@]}" cat-file -e "$COMMIT^{commit}" 2>/dev/null; then
	# a shallow clone (CI) may not hold the release
	depth=()
	[ "$("${g[@]}" rev-parse --is-shallow-repository)" = true ] && depth=(--depth=1)
	"${g[@]}" fetch --quiet "${depth[@]}" origin "$COMMIT" ||
		die "commit $COMMIT is not in $ROOT and could not be fetched from origin"
fi

mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
"${g[@]}" worktree add --quiet --detach "$DEST/src" "$COMMIT" || die "git worktree add failed"
# the worktree is only needed for the build; its files are copied below
trap '"${g[@]}" worktree remove --force "$DEST/src" 2>/dev/null || true' EXIT

# The same compiler and flags as the release (its Makefile has -Werror).
make -C "$DEST/src" -s -j2 PG_CONFIG="$PG_CONFIG" >"$DEST/build.log" 2>&1 ||
	{ tail -n 40 "$DEST/build.log" >&2; die "building $COMMIT failed (log: $DEST/build.log)"; }
make -C "$DEST/src" -s install PG_CONFIG="$PG_CONFIG" DESTDIR="$DEST/stage" >>"$DEST/build.log" 2>&1 ||
	{ tail -n 40 "$DEST/build.log" >&2; die "make install of $COMMIT into $DEST/stage failed"; }

bindir=$("$PG_CONFIG" --bindir)
pkglibdir=$("$PG_CONFIG" --pkglibdir)
sharedir=$("$PG_CONFIG" --sharedir)
top=$(dirname "$bindir")
case "$pkglibdir" in
	"$top"/*) ;;
	*) die "pkglibdir $pkglibdir is not next to bindir $bindir: cannot copy the install" ;;
esac
mkdir -p "$DEST/pg$top" "$DEST/pg$sharedir"
cp -a "$top/." "$DEST/pg$top/"
cp -a "$sharedir/." "$DEST/pg$sharedir/"
# HEAD's archer, if installed there, is no part of the old install
rm -rf "$DEST/pg$pkglibdir/archer.so" "$DEST/pg$pkglibdir/bitcode/archer" \
	"$DEST/pg$pkglibdir/bitcode/archer.index.bc" "$DEST/pg$sharedir/extension/archer"*
cp -a "$DEST/stage/." "$DEST/pg/"
rm -rf "$DEST/stage"

old=$DEST/pg$bindir/pg_config
[ "$("$old" --sharedir)" = "$DEST/pg$sharedir" ] ||
	die "the copy's pg_config reports sharedir $("$old" --sharedir), not $DEST/pg$sharedir: the install is not relocatable"
[ -f "$DEST/pg$pkglibdir/archer.so" ] || die "no archer.so in the copy"
echo "$old"
