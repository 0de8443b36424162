-- Run after the file-1 captures: mysql-bin.000003, a binlog file written without checksums (the file3_* captures).
-- SET GLOBAL binlog_checksum rotates the binlog, so the INSERT is the only group of the new file.
SET GLOBAL binlog_checksum=NONE;
INSERT INTO d.t VALUES (11,'nocrc file',11);
