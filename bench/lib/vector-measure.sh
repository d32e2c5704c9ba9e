# bench/lib/vector-measure.sh: how bench/vector and bench/vector-scale
# measure a query configuration: declared with cfg, then measured with its
# group by run_group (plans checked, recall scored by bench/sql/vector.sql,
# pgbench passes taking turns, medians into vbench_result).
# Sourced after lib/common.sh, once the caller has set WORK, PGBIN, nq,
# secs, passes and pgv (1 when pgvector takes part).
# shellcheck shell=bash
# shellcheck disable=SC2154  # WORK, PGBIN, nq, secs, passes, pgv: the caller's
# A group of configurations is declared with cfg, then measured together
# by run_group: plans checked, then the passes interleaved.
G=()
declare -A C_phase C_set C_op C_kind C_table C_test C_index C_cond C_meta C_gucs C_clients
# pgbench clients (and threads) of the configurations cfg declares
cfg_clients=1

# cfg NAME PHASE SET OP KIND TABLE TEST INDEX INDEX_COND META_JSON GUC...
# (INDEX empty: no plan check and no recall, the exact scan)
cfg() {
	local name=$1
	G+=("$name")
	C_phase[$name]=$2 C_set[$name]=$3 C_op[$name]=$4 C_kind[$name]=$5
	C_table[$name]=$6 C_test[$name]=$7 C_index[$name]=$8 C_cond[$name]=$9 C_meta[$name]=${10}
	C_clients[$name]=$cfg_clients
	shift 10
	C_gucs[$name]="$*"
}

# the settings of NAME as pgbench's PGOPTIONS, and as a SQL text[] literal
gucs_opts() { local g o=""; for g in ${C_gucs[$1]}; do o="$o -c $g"; done; echo "$o"; }
gucs_sql() { local g a=""; for g in ${C_gucs[$1]}; do a="$a${a:+,}\"$g\""; done; echo "'{$a}'"; }

# one pgbench pass of NAME; pass 0 is the warm-up (not recorded)
bench_pass() {
	local name=$1 pass=$2 dir=$WORK/lat/$1 clients=${C_clients[$1]}
	(
		cd "$dir" || exit 1
		if [ "$pass" = 0 ]; then
			PGOPTIONS=$(gucs_opts "$name") "$PGBIN/pgbench" -n -M prepared -T "$secs" \
				-c "$clients" -j "$clients" -f "$dir/query.sql" -U postgres vbench >/dev/null
		else
			PGOPTIONS=$(gucs_opts "$name") "$PGBIN/pgbench" -n -M prepared -T "$secs" \
				-c "$clients" -j "$clients" -f "$dir/query.sql" -U postgres -l --log-prefix="pass$pass" vbench |
				sed -n 's/^tps = \([0-9.]*\) .*/\1/p' >>"$dir/tps"
		fi
	) || die "pgbench failed for $name"
}

# median q/s, latencies and recall of NAME, into vbench_result
finish() {
	local name=$1 dir=$WORK/lat/$1 qps=() lat rec="{}"
	mapfile -t qps < <(sort -g "$dir/tps")
	[ ${#qps[@]} = "$passes" ] || die "pgbench printed no tps for $name"
	# per-transaction latencies (microseconds, third field) of every timed pass
	lat=$(cat "$dir"/pass* | awk '{print $3}' | sort -n | awk '{a[NR] = $1} END {
		printf "{\"p50_ms\": %.4f, \"p99_ms\": %.4f}", a[int(NR * 0.5) + 1] / 1000, a[int(NR * 0.99) + 1] / 1000 }')
	if [ -n "${C_index[$name]}" ]; then
		rec=$(psql_run -At ${pgv_load:+-c "$pgv_load"} -c "SELECT vbench_recall('${C_set[$name]}',
			'${C_op[$name]}', '${C_kind[$name]}', $nq, '${C_table[$name]}', '${C_test[$name]}', $(gucs_sql "$name"))")
	fi
	psql_run -c "INSERT INTO vbench_result (phase, name, m) VALUES ('${C_phase[$name]}', '$name',
		'${C_meta[$name]}'::jsonb || '$rec'::jsonb || '$lat'::jsonb || jsonb_build_object(
		'dataset', '${C_set[$name]}', 'op', '${C_op[$name]}', 'kind', '${C_kind[$name]}',
		'table', '${C_table[$name]}', 'index', '${C_index[$name]}', 'settings', '${C_gucs[$name]}',
		'qps', ${qps[$(((passes - 1) / 2))]}, 'passes', $passes, 'seconds_per_pass', $secs,
		'clients', ${C_clients[$name]}))"
}
# pgvector's settings are placeholders until its library loads: the recall
# session loads it first, so that they are in force from the start
pgv_load=""
[ $pgv = 1 ] && pgv_load="LOAD 'vector'"

# run_group LABEL: check every plan, then the passes (0 = warm-up) with the
# configurations taking turns, each pass starting one later; then record
run_group() {
	local label=$1 n=${#G[@]} name pass k
	for name in "${G[@]}"; do
		rm -rf "$WORK/lat/$name"
		mkdir -p "$WORK/lat/$name"
		{
			echo "\\set q random(1, $nq)"
			psql_run -At -c "SELECT replace(vbench_sql('${C_table[$name]}', '${C_test[$name]}',
				'${C_kind[$name]}', '${C_op[$name]}'), '\$1', ':q') || ';'"
		} >"$WORK/lat/$name/query.sql"
		[ -n "${C_index[$name]}" ] || continue
		psql_run ${pgv_load:+-c "$pgv_load"} -c "SELECT vbench_check_plan('${C_table[$name]}', '${C_test[$name]}',
			'${C_kind[$name]}', '${C_op[$name]}', '${C_index[$name]}', ${C_cond[$name]}, $(gucs_sql "$name"))" >/dev/null
	done
	for pass in $(seq 0 "$passes"); do
		log "phase $label: $([ "$pass" = 0 ] && echo warm-up || echo "pass $pass of $passes"), $n configurations"
		for k in $(seq 0 $((n - 1))); do
			bench_pass "${G[$(((k + pass) % n))]}" "$pass"
		done
	done
	for name in "${G[@]}"; do finish "$name"; done
	G=()
}

opname() { case $1 in '<->') echo l2 ;; '<#>') echo ip ;; '<=>') echo cosine ;; esac; }
