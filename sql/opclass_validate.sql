-- amvalidate on broken operator classes: each is reported (INFO) and
-- rejected (false), never accepted.
SET client_min_messages = info;
-- archer_vector: no operator at all (the index would have no metric)
CREATE OPERATOR CLASS bad_none FOR TYPE avector USING archer_vector AS STORAGE avector;
-- a distance operator under a strategy that is no metric
CREATE OPERATOR CLASS bad_strategy FOR TYPE avector USING archer_vector AS
	OPERATOR 4 <-> (avector, avector) FOR ORDER BY float_ops;
-- a metric's operator as a search operator (no FOR ORDER BY)
CREATE OPERATOR CLASS bad_purpose FOR TYPE real[] USING archer_vector AS
	OPERATOR 1 = (anyarray, anyarray);
-- an operator on another type than the class's
CREATE OPERATOR CLASS bad_type FOR TYPE avector USING archer_vector AS
	OPERATOR 1 <-> (real[], real[]) FOR ORDER BY float_ops;
-- two metrics in one class (the index would pick one silently)
CREATE OPERATOR CLASS bad_two FOR TYPE avector USING archer_vector AS
	OPERATOR 1 <-> (avector, avector) FOR ORDER BY float_ops,
	OPERATOR 2 <#> (avector, avector) FOR ORDER BY float_ops;
-- archer_vector and archer_geo have no support functions
CREATE OPERATOR CLASS bad_function FOR TYPE avector USING archer_vector AS
	OPERATOR 1 <-> (avector, avector) FOR ORDER BY float_ops,
	FUNCTION 1 archer_vector_norm(avector);
CREATE OPERATOR CLASS bad_geo_function FOR TYPE point USING archer_geo AS
	OPERATOR 3 <-> (point, point) FOR ORDER BY float_ops,
	FUNCTION 1 point_distance(point, point);
-- archer_geo: a search operator as an ordering one; a strategy out of range
CREATE OPERATOR CLASS bad_geo_purpose FOR TYPE point USING archer_geo AS
	OPERATOR 1 <@ (point, archer_cap) FOR ORDER BY float_ops;
CREATE OPERATOR CLASS bad_geo_strategy FOR TYPE point USING archer_geo AS
	OPERATOR 9 <-> (point, point) FOR ORDER BY float_ops;
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_none';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_strategy';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_purpose';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_type';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_two';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_geo_purpose';
DROP OPERATOR CLASS bad_none USING archer_vector;
DROP OPERATOR CLASS bad_strategy USING archer_vector;
DROP OPERATOR CLASS bad_purpose USING archer_vector;
DROP OPERATOR CLASS bad_type USING archer_vector;
DROP OPERATOR CLASS bad_two USING archer_vector;
DROP OPERATOR CLASS bad_geo_purpose USING archer_geo;
-- the shipped classes stay valid
SELECT am.amname, bool_and(amvalidate(c.oid)) FROM pg_opclass c JOIN pg_am am ON am.oid = c.opcmethod
WHERE am.amname IN ('archer_geo', 'archer_vector') GROUP BY 1 ORDER BY 1;
-- archer_geo knows PostGIS's types by OID, not by name: a type named
-- geometry in another schema (a domain over point) is no PostGIS geometry
CREATE SCHEMA fake;
CREATE DOMAIN fake.geometry AS point;
CREATE OPERATOR CLASS fake_geometry_ops FOR TYPE fake.geometry USING archer_geo AS
	OPERATOR 3 <-> (point, point) FOR ORDER BY float_ops;
CREATE TABLE fake_t (g fake.geometry);
INSERT INTO fake_t VALUES (point(1, 1));
CREATE INDEX ON fake_t USING archer_geo (g fake_geometry_ops);
DROP TABLE fake_t;
DROP OPERATOR CLASS fake_geometry_ops USING archer_geo;
DROP SCHEMA fake CASCADE;
