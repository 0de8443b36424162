-- The workload behind the multi-domain captures (python -m tests.data.oracle.multidomain.record runs it).
--
-- One session, as root, on a primary with server_id 1 (ROW, annotate events, CRC32). Four GTID domains
-- (0, 10, 2, 7) and three server_ids (1, 2, 3) are set per statement with SET SESSION gtid_domain_id /
-- server_id, so file 2 holds each domain's first event at a known place, interleaved, with flagged
-- (skip_replication) groups in two domains, and file 3 starts with a GTID_LIST naming every domain in
-- MariaDB's own order. Keep the statements byte-identical unless the stored captures are recorded again.

CREATE DATABASE m;
CREATE TABLE m.t (id INT PRIMARY KEY, d INT, v VARCHAR(40)) ENGINE=InnoDB;
INSERT INTO m.t VALUES (1,0,'d0 file1');
FLUSH BINARY LOGS;

INSERT INTO m.t VALUES (2,0,'d0 s1');
SET SESSION gtid_domain_id=10;
SET SESSION server_id=2;
INSERT INTO m.t VALUES (3,10,'d10 first');
INSERT INTO m.t VALUES (4,10,'d10 second');
SET SESSION gtid_domain_id=2;
SET SESSION server_id=1;
BEGIN; INSERT INTO m.t VALUES (5,2,'d2 first trx a'); INSERT INTO m.t VALUES (6,2,'d2 first trx b'); COMMIT;
SET SESSION gtid_domain_id=0;
SET SESSION server_id=3;
INSERT INTO m.t VALUES (7,0,'d0 s3');
SET SESSION gtid_domain_id=7;
SET SESSION server_id=2;
SET skip_replication=1;
INSERT INTO m.t VALUES (8,7,'d7 first, flagged');
SET skip_replication=0;
INSERT INTO m.t VALUES (9,7,'d7 second');
SET SESSION gtid_domain_id=10;
SET SESSION server_id=1;
INSERT INTO m.t VALUES (10,10,'d10 s1');
SET SESSION gtid_domain_id=2;
SET skip_replication=1;
CREATE TABLE m.flagged_ddl (x INT);
SET skip_replication=0;
INSERT INTO m.t VALUES (11,2,'d2 second');
SET SESSION gtid_domain_id=0;
INSERT INTO m.t VALUES (12,0,'d0 s1 again');
FLUSH BINARY LOGS;

SET SESSION gtid_domain_id=7;
INSERT INTO m.t VALUES (13,7,'d7 file3');
SET SESSION gtid_domain_id=0;
SET SESSION server_id=3;
INSERT INTO m.t VALUES (14,0,'d0 s3 file3');
SET SESSION gtid_domain_id=10;
SET SESSION server_id=2;
INSERT INTO m.t VALUES (15,10,'d10 file3');
