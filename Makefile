# archer: spatial and vector index access methods for PostgreSQL (PGXS build)

EXTENSION = archer archer_postgis
EXTVERSION = 0.2.0

MODULE_big = archer
# src/common: what both access methods share (pages, insert buffer, merging);
# src/geo: archer_geo and its S2 geometry; src/vector: archer_vector and its
# vector types; src/archer.c loads them all
OBJS = \
	src/archer.o \
	src/common/archer_stats.o \
	src/common/storage.o \
	src/common/amroutine.o \
	src/common/owner.o \
	src/common/prefetch.o \
	src/common/insert_buffer.o \
	src/common/merge.o \
	src/common/worker.o \
	src/geo/s2cell.o \
	src/geo/georegion.o \
	src/geo/geo_decode.o \
	src/geo/geo_types.o \
	src/geo/geo_postgis.o \
	src/geo/geo_pointcode.o \
	src/geo/geo_handler.o \
	src/geo/geo_tree.o \
	src/geo/geo_build.o \
	src/geo/geo_parallel.o \
	src/geo/geo_buffer.o \
	src/geo/geo_insert.o \
	src/geo/geo_regioncache.o \
	src/geo/geo_scan.o \
	src/geo/geo_knn.o \
	src/geo/geo_itup.o \
	src/geo/geo_vacuum.o \
	src/geo/geo_visibility.o \
	src/geo/geo_verify.o \
	src/vector/vector.o \
	src/vector/vector_kernels.o \
	src/vector/vector_selftest.o \
	src/vector/vec_buffer.o \
	src/vector/vec_build.o \
	src/vector/vec_handler.o \
	src/vector/vec_hnsw.o \
	src/vector/vec_graph.o \
	src/vector/vec_insert.o \
	src/vector/vec_reach.o \
	src/vector/vec_scan.o \
	src/vector/vec_search.o \
	src/vector/vec_utils.o \
	src/vector/vec_vacuum.o \
	src/vector/vec_verify.o

DATA = $(wildcard sql/install/*--*.sql)

# pg_regress: sql/*.sql against expected/*.out
REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=. --load-extension=plpgsql

# isolation specs: test/isolation/specs/*.spec
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(sort $(wildcard test/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test/isolation

# Perl TAP tests (PostgreSQL::Test::Cluster)
TAP_TESTS = 1
# (?=: `PROVE_TESTS=test/t/NNN_x.pl bash test/run --suite=tap` runs only those)
PROVE_TESTS ?= $(sort $(wildcard test/t/*.pl))

PG_CPPFLAGS = -I$(srcdir)/src/common -I$(srcdir)/src/geo -I$(srcdir)/src/vector
# -fno-semantic-interposition: calls between our own exported functions are
# direct (and inlinable) instead of going through the PLT.
# -ffp-contract=off: no fused multiply-adds where the source has none, so
# floating-point results (the point codes of geo_pointcode.c) are the same
# bits on every machine that replays the WAL
# -flto=auto: small helpers of one module called per row from another (the
# point code of an index-only row) inline across files; callgrind, 70 counts
# of Brazil on the dev cluster: 3% fewer instructions
# No -Werror here: a new compiler's new warning must not break a user's or
# a package's build (test/run and CI build with COPT=-Werror).
PG_CFLAGS = -Wall -Wno-unused-parameter -fno-semantic-interposition -ffp-contract=off -flto=auto

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The JIT's bitcode (.bc, compiled by clang from BITCODE_CFLAGS, which
# PG_CFLAGS does not reach) must compute the same floating-point results as
# the shared library: clang contracts a * b + c into a fused multiply-add by
# default.
BITCODE_CFLAGS += -ffp-contract=off
