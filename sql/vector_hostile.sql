-- Hostile values (NaN, infinities) at every entry point of archer_vector:
-- build, insert, buffered insert and query each raise the same data
-- exception (22000) as the distance operators on a sequential scan, on
-- real[] and avector, instead of indexing a row whose decoded distances are
-- all NaN (a search over such an index could never finish).
SET statement_timeout = '20s';
\set VERBOSITY sqlstate

-- the tracker's reproduction: the build refuses the Infinity row
SELECT setseed(0.5);
CREATE TABLE vh(id int, e real[]);
INSERT INTO vh SELECT g, ARRAY[random(), random(), random()]::real[] FROM generate_series(1,2000) g;
INSERT INTO vh VALUES (0, '{Infinity,0,0}');
CREATE INDEX ON vh USING archer_vector (e);
SET enable_seqscan = off;
SET statement_timeout = '5s';
SELECT id FROM vh ORDER BY e <-> '{.5,.5,.5}' LIMIT 5;
RESET enable_seqscan;
SET statement_timeout = '20s';

-- build refuses NaN and -Infinity too
UPDATE vh SET e = '{NaN,0,0}' WHERE id = 0;
CREATE INDEX ON vh USING archer_vector (e);
UPDATE vh SET e = '{0,-Infinity,0}' WHERE id = 0;
CREATE INDEX ON vh USING archer_vector (e);

-- with finite rows only, the index builds; inserts of non-finite rows fail
UPDATE vh SET e = '{0,0,0}' WHERE id = 0;
CREATE INDEX vh_e ON vh USING archer_vector (e);
INSERT INTO vh VALUES (-1, '{Infinity,0,0}');
INSERT INTO vh VALUES (-1, '{NaN,0,0}');
INSERT INTO vh VALUES (-1, '{0,0,-Infinity}');

-- a non-finite query vector: the same error on the index and the seq scan
SET enable_seqscan = off;
SELECT id FROM vh ORDER BY e <-> '{Infinity,0,0}' LIMIT 5;
SELECT id FROM vh ORDER BY e <-> '{NaN,0,0}' LIMIT 5;
SET enable_seqscan = on;
SET enable_indexscan = off;
SELECT id FROM vh ORDER BY e <-> '{Infinity,0,0}' LIMIT 5;
SELECT id FROM vh ORDER BY e <-> '{NaN,0,0}' LIMIT 5;
RESET enable_indexscan;
RESET enable_seqscan;

-- buffered inserts refuse them at insert time, before they reach a merge
CREATE TABLE vhb(id int, e real[]);
INSERT INTO vhb SELECT g, ARRAY[g, 1, 1]::real[] FROM generate_series(1,50) g;
CREATE INDEX ON vhb USING archer_vector (e) WITH (insert_buffer = on);
INSERT INTO vhb VALUES (-1, '{Infinity,0,0}');
INSERT INTO vhb VALUES (-1, '{NaN,0,0}');
INSERT INTO vhb VALUES (51, '{51,1,1}');
SET enable_seqscan = off;
SELECT id FROM vhb ORDER BY e <-> '{50.2,1,1}' LIMIT 3;
RESET enable_seqscan;

-- avector cannot hold non-finite values at all
SELECT '[Infinity,0,0]'::avector;
SELECT '[NaN,0,0]'::avector;
SELECT '{Infinity,0,0}'::real[]::avector;

DROP TABLE vh, vhb;
