"""The ten-line first example of docs/testing.md, as it is there."""

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent


def test_my_cdc_client_skips_flagged_rows(binlog_builder, binlogd_factory):
    binlog_builder.statement("CREATE TABLE shop.t (id INT PRIMARY KEY)", db="shop")
    for i, flagged in ((1, False), (2, True), (3, False)):
        with binlog_builder.transaction(skip_replication=flagged) as t:   # flagged: events carry 0x8000
            t.insert("shop", "t", ["id INT PRIMARY KEY"], [(i,)])
    server = binlogd_factory.serve(binlog_builder)                        # binlogd --binlog-dir on a free port
    stream = BinLogStreamReader({"host": server.host, "port": server.port, "user": "root", "passwd": "",
                                 "init_command": "SET skip_replication=1"}, server_id=9, only_events=[WriteRowsEvent])
    assert [row["values"]["id"] for ev in stream for row in ev.rows] == [1, 3]
    assert server.connections()[0].count("hole", "skip_replication") == 4   # GTID, TABLE_MAP, WRITE_ROWS, XID
