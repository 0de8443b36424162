-- mysql-bin.000003, a binlog file written without checksums (the file3_* captures). regenerate.py runs this after
-- the file-1 captures and after `SET GLOBAL binlog_checksum=NONE` (which rotates to file 3) has had its
-- Binlog_checkpoint written, so this INSERT is the only group of file 3 and comes after both checkpoints.
INSERT INTO d.t VALUES (11,'nocrc file',11);
