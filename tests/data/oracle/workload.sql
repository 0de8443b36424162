-- The workload behind the MariaDB 10.11 oracle captures (tests/data/oracle/regenerate.py runs it).
--
-- Run as root, one statement at a time in ONE session, on a primary started with binlog_format=ROW and
-- binlog_annotate_row_events=ON. Every line below is a case the dump tests need in mysql-bin.000001/2:
-- autocommit rows, a row group flagged skip_replication (0x8000), a multi-row event, DDL, a multi-statement
-- transaction, a flagged transaction and flagged DDL, a flagged statement-format group, a USER_VAR event,
-- an explicit transaction, and a rotation followed by one more group in the next file.
-- Comments and blank lines are not sent: they would end up in Annotate_rows and QUERY texts and change
-- event sizes. Keep the statements byte-identical unless the stored captures are regenerated too.

CREATE DATABASE d;
CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB;
INSERT INTO d.t VALUES (1,'normal autocommit');

SET skip_replication=1;
INSERT INTO d.t VALUES (2,'skip autocommit');
SET skip_replication=0;

INSERT INTO d.t VALUES (3,'multi-row a'),(4,'multi-row b');
ALTER TABLE d.t ADD COLUMN n INT NULL;
BEGIN; INSERT INTO d.t VALUES (5,'trx1',1); UPDATE d.t SET n=2 WHERE id=1; DELETE FROM d.t WHERE id=3; COMMIT;

SET skip_replication=1;
BEGIN; INSERT INTO d.t VALUES (6,'skip trx',6); UPDATE d.t SET n=6 WHERE id=4; COMMIT;
CREATE TABLE d.skipped_ddl (x INT);
SET SESSION binlog_format=STATEMENT;
INSERT INTO d.t VALUES (10,'skip stmt-format',10);
SET skip_replication=0;

SET @uv='user var';
INSERT INTO d.t VALUES (7,@uv,7);
SET SESSION binlog_format=ROW;
BEGIN; INSERT INTO d.t VALUES (8,'trx2',8); COMMIT;

FLUSH BINARY LOGS;
INSERT INTO d.t VALUES (9,'after rotate',9);
