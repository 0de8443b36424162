"""Binlog event body codecs and SHOW BINLOG EVENTS text, checked against real MariaDB 10.11 output.

Ground truth: shared/oracle/mariadb-10.11/dump (three binlog files + what SHOW BINLOG EVENTS printed for
them, two captured stream events), and REAL_EVENTS below: events of other kinds (user variables of
every type, XA, two-phase ALTER, group commit ids, compressed events, a CRC-less file, binlog
encryption) written by a private MariaDB 10.11.19 server, each with the Event_type and Info its SHOW
BINLOG EVENTS printed. Expected values come from those servers, never from the code under test.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from binlogd.protocol.checksum import crc_ok, event_crc, with_crc
from binlogd.protocol.constants import (
    ANNOTATE_ROWS_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_STANDALONE,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    GTID_LIST_FLAG_UNTIL_REACHED,
    HEARTBEAT_LOG_EVENT,
    INTVAR_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_IGNORABLE_F,
    MYSQL_GTID_LOG_EVENT,
    Q_AUTO_INCREMENT,
    Q_CATALOG_CODE,
    Q_CATALOG_NZ_CODE,
    Q_CHARSET_CODE,
    Q_CHARSET_DATABASE_CODE,
    Q_DDL_LOGGED_WITH_XID,
    Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP,
    Q_FLAGS2_CODE,
    Q_GTID_FLAGS3,
    Q_HRNOW,
    Q_INVOKER,
    Q_LC_TIME_NAMES_CODE,
    Q_MICROSECONDS,
    Q_SQL_MODE_CODE,
    Q_TABLE_MAP_FOR_UPDATE_CODE,
    Q_TIME_ZONE_CODE,
    Q_UPDATED_DB_NAMES,
    Q_XID,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
    WRITE_ROWS_EVENT,
    WRITE_ROWS_EVENT_V1,
    XID_EVENT,
)
from binlogd.protocol.describe import collation_name, describe, describe_raw, format_double
from binlogd.protocol.events import (
    MARIADB_10_11_POST_HEADER_LENGTHS,
    AnnotateRowsBody,
    AutoIncrement,
    BinlogCheckpointBody,
    EventDecodeError,
    EventHeader,
    FormatDescriptionBody,
    Gtid,
    GtidBody,
    GtidFlags3,
    GtidListBody,
    HeartbeatBody,
    IncidentBody,
    IntvarBody,
    Invoker,
    QueryBody,
    QueryCharset,
    RandBody,
    RotateBody,
    RowsBody,
    StartEncryptionBody,
    TableMapBody,
    UnknownBody,
    UpdatedDbNames,
    UserVarBody,
    XaId,
    XidBody,
    build_event,
    compress_payload,
    decompress_payload,
    encode_annotate_rows,
    encode_binlog_checkpoint,
    encode_format_description,
    encode_gtid,
    encode_gtid_list,
    encode_heartbeat,
    encode_incident,
    encode_intvar,
    encode_query,
    encode_rand,
    encode_rotate,
    encode_rows,
    encode_start_encryption,
    encode_table_map,
    encode_user_var,
    encode_xid,
    fde_checksum_alg,
    iter_binlog,
    parse_event,
    parse_gtid,
    parse_gtid_list,
    parse_header,
    parse_heartbeat,
    parse_incident,
    parse_query,
    parse_start_encryption,
    parse_status_vars,
    parse_user_var,
)

from tests.oracle_data import ORACLE

SERVER_VERSION = "10.11.19-MariaDB-0+deb12u1-log"


def oracle_file(n: int) -> bytes:
    path = ORACLE / f"mysql-bin.00000{n}"
    if not path.is_file():
        pytest.fail(f"oracle binlog missing: {path}")
    return path.read_bytes()


def events_of(n: int) -> list[tuple[int, bytes, int]]:
    """(position, event, checksum algorithm of the file) for every event of oracle file n."""
    out = []
    alg = -1
    for pos, ev in iter_binlog(oracle_file(n)):
        if ev[4] == FORMAT_DESCRIPTION_EVENT:
            alg = fde_checksum_alg(ev)
        out.append((pos, ev, alg))
    return out


def event_at(n: int, pos: int) -> tuple[bytes, int]:
    for p, ev, alg in events_of(n):
        if p == pos:
            return ev, alg
    raise AssertionError(f"no event at {pos} in file {n}")


def show_binlog_events() -> dict[tuple[str, int], tuple[str, int, int, str]]:
    """(Log_name, Pos) -> (Event_type, Server_id, End_log_pos, Info) from the oracle's SHOW BINLOG EVENTS."""
    rows = {}
    for line in (ORACLE / "show_binlog_events.txt").read_text().splitlines():
        cols = line.split("\t")
        if cols[0] == "Log_name" or len(cols) != 6:
            continue
        rows[(cols[0], int(cols[1]))] = (cols[2], int(cols[3]), int(cols[4]), cols[5])
    return rows


# Events written by a private MariaDB 10.11.19 (server_id 7/8) and what its SHOW BINLOG EVENTS printed:
# (event hex, the file's checksum algorithm, Event_type, Info).
REAL_EVENTS: tuple[tuple[str, int, str, str], ...] = (
    # ev.000001 @493
    (
        "803a026b02070000005e0000004b02000008000b000000000000000600001a0000000000010100002054000000000603"
        "7374640421002100080077656069726400435245415445204441544142415345206077656060697264608c40fe58",
        1,
        "Query",
        "CREATE DATABASE `we``ird`",
    ),
    # ev.000001 @1005
    (
        "803a026b0507000000200000000d0400000000020100000000000000fd9fc61f",
        1,
        "Intvar",
        "INSERT_ID=1",
    ),
    # ev.000001 @1037
    (
        "803a026b0e070000002f0000003c0400000000010000006900020800000008000000fbffffffffffffff00bfeaf0a4",
        1,
        "User var",
        "@`i`=-5",
    ),
    # ev.000001 @1282
    (
        "803a026b0e070000002f000000310500000000010000007500020800000008000000ffffffffffffffff01e6b5792b",
        1,
        "User var",
        "@`u`=18446744073709551615",
    ),
    # ev.000001 @1527
    (
        "803a026b0e070000002e000000250600000000010000007200010800000008000000355800662deb417edebe9818",
        1,
        "User var",
        "@`r`=1.5e300",
    ),
    # ev.000001 @1771
    (
        "803a026b0e070000002f0000001a0700000000020000007232000108000000080000009a9999999999b93fe18a8707",
        1,
        "User var",
        "@`r2`=0.1",
    ),
    # ev.000001 @2017
    (
        "803a026b0e070000002f00000010080000000002000000723300010800000008000000408cb5781daf1544370f318c",
        1,
        "User var",
        "@`r3`=1e20",
    ),
    # ev.000001 @2263
    (
        "803a026b0e070000002f000000060900000000020000007234000108000000080000008dedb5a0f7c690beba2c19cc",
        1,
        "User var",
        "@`r4`=-0.00000025",
    ),
    # ev.000001 @2509
    (
        "803a026b0e070000002f000000fc090000000002000000723500010800000008000000350f63bab4697b431b6922b9",
        1,
        "User var",
        "@`r5`=1.2345678901234568e17",
    ),
    # ev.000001 @2755
    (
        "803a026b0e070000002d000000f00a00000000020000006464000408000000060000000704807b119446026ce6",
        1,
        "User var",
        "@`dd`=123.4500",
    ),
    # ev.000001 @2999
    (
        "803a026b0e070000002c000000e30b0000000002000000646e0004080000000500000004037ffffee6ada5c2",
        1,
        "User var",
        "@`dn`=-0.001",
    ),
    # ev.000001 @3242
    (
        "803a026b0e0700000038000000e20c0000000004000000646269670004080000000f0000001d098c149aa4350dfb38d2"
        "075bcd151f880b34",
        1,
        "User var",
        "@`dbig`=12345678901234567890.123456789",
    ),
    # ev.000001 @3499
    (
        "803a026b0e070000002f000000da0d0000000002000000647a000408000000080000000c03800000000000aa5b8779",
        1,
        "User var",
        "@`dz`=0.000",
    ),
    # ev.000001 @3745
    (
        "803a026b0e070000001d000000be0e00000000010000006e01657578b4",
        1,
        "User var",
        "@`n`=NULL",
    ),
    # ev.000001 @3972
    (
        "803a026b0e0700000029000000ad0f00000000010000007300000800000003000000616263443be66e",
        1,
        "User var",
        "@`s`=_latin1 X'616263' COLLATE latin1_swedish_ci",
    ),
    # ev.000001 @4211
    (
        "803a026b0e07000000290000009c1000000000010000006200003f00000003000000780079c569be5a",
        1,
        "User var",
        "@`b`=_binary X'780079' COLLATE binary",
    ),
    # ev.000001 @4450
    (
        "803a026b0e07000000260000008811000000000100000065000021000000000000008cab39f4",
        1,
        "User var",
        '@`e`=_utf8mb3 "" COLLATE utf8mb3_general_ci',
    ),
    # ev.000001 @4686
    (
        "803a026b0e07000000310000007f1200000000030000006160620002080000000800000001000000000000000007bdac80",
        1,
        "User var",
        "@`a``b`=1",
    ),
    # ev.000001 @4938
    (
        "803a026b0e070000002c000000761300000000010000007800004009000006000000c3a5c3a4c3b62a9291f6",
        1,
        "User var",
        "@`x`=_utf8mb4 X'C3A5C3A4C3B6' COLLATE utf8mb4_uca1400_swedish_ai_ci",
    ),
    # ev.000001 @5180
    (
        "803a026b0e07000000280000006414000000000200000078320000f6040000010000007a3caacdba",
        1,
        "User var",
        "@`x2`=_utf8mb4 X'7A' COLLATE utf8mb4_unicode_520_nopad_ci",
    ),
    # ev.000001 @5587
    (
        "803a026b050700000020000000f31500000000011300000000000000167ac046",
        1,
        "Intvar",
        "LAST_INSERT_ID=19",
    ),
    # ev.000001 @5863
    (
        "803a026b0d07000000270000000e17000000009c23ba2a00000000a133c410000000008f1ff960",
        1,
        "RAND",
        "rand_seed1=716841884,rand_seed2=281293729",
    ),
    # ev.000001 @6115
    (
        "803a026b02070000005f0000004218000000000b000000000000000100001a0000000000050100002054000000000603"
        "737464040800080008006400494e5345525420494e544f2074202876292056414c554553202827666b27299d8a3c73",
        1,
        "Query",
        "use `d`; set foreign_key_checks=0; INSERT INTO t (v) VALUES ('fk')",
    ),
    # ev.000001 @6315
    (
        "803a026b02070000005f0000000a19000000000b000000000000000100001a0000000000090100002054000000000603"
        "737464040800080008006400494e5345525420494e544f2074202876292056414c5545532028277563272905d211e0",
        1,
        "Query",
        "use `d`; set unique_checks=0; INSERT INTO t (v) VALUES ('uc')",
    ),
    # ev.000001 @6515
    (
        "803a026b02070000005f000000d219000000000b000000000000000100001a0000008000010100002054000000000603"
        "737464040800080008006400494e5345525420494e544f2074202876292056414c55455320282763632729124b5d5a",
        1,
        "Query",
        "use `d`; set check_constraint_checks=0; INSERT INTO t (v) VALUES ('cc')",
    ),
    # ev.000001 @6715
    (
        "803a026b0207000000600000009b1a000000000b000000000000000100001a0000004000010100002054000000000603"
        "737464040800080008006400494e5345525420494e544f2074202876292056414c55455320282761696e27298b889ef8",
        1,
        "Query",
        "use `d`; set sql_auto_is_null=1; INSERT INTO t (v) VALUES ('ain')",
    ),
    # ev.000001 @6916
    (
        "803a026b020700000061000000651b000000000b000000000000000100001a00000000000d0100002054000000000603"
        "737464040800080008006400494e5345525420494e544f2074202876292056414c554553202827626f74682729145557"
        "28",
        1,
        "Query",
        "use `d`; set foreign_key_checks=0, unique_checks=0; INSERT INTO t (v) VALUES ('both')",
    ),
    # ev.000001 @7086
    (
        "803a026b0207000000800000002e1c000004000b00000000000000010000230000000000110100002054000000000603"
        "73746404080008000800815000000000000000640044524f50205441424c452049462045584953545320606e6f737563"
        "6860202f2a2067656e65726174656420627920736572766572202a2fea5a1065",
        1,
        "Query",
        "use `d`; set @@sql_if_exists=1; DROP TABLE IF EXISTS `nosuch` /* generated by server */",
    ),
    # ev.000001 @7256
    (
        "803a026b020700000064000000bc1c000000000b00000000000000060000230000000000010100002054000000000603"
        "7374640408000800080081540000000000000077656069726400435245415445205441424c45207120286120494e5429"
        "4c2ca6f1",
        1,
        "Query",
        "use `we``ird`; CREATE TABLE q (a INT)",
    ),
    # ev.000001 @8288
    (
        "803a026b02070000004b000000ab20000008000b000000000000000600001a0000000000010100002054000000000603"
        "7374640408000800080077656069726400434f4d4d4954728d84a3",
        1,
        "Query",
        "COMMIT",
    ),
    # ev.000001 @8939
    (
        "803a026ba207000000310000001c23000008002800000000000000000000004c070000000302677472627101ff09b4cd4d",
        1,
        "Gtid",
        "XA START X'677472',X'6271',7 GTID 0-7-40",
    ),
    # ev.000001 @9115
    (
        "803a026b02070000005a000000f523000008000b000000000000000100001a0000000000010100002054000000000603"
        "737464040800080008006400584120454e44205827363737343732272c582736323731272c3732f3ed10",
        1,
        "Query",
        "XA END X'677472',X'6271',7",
    ),
    # ev.000001 @9205
    (
        "803a026b2607000000290000001e24000000000007000000030000000200000067747262716d0308e9",
        1,
        "XA_prepare",
        "XA PREPARE X'677472',X'6271',7",
    ),
    # ev.000001 @9246
    (
        "803a026ba2070000002f0000004d24000008002900000000000000000000008d070000000302677472627162e76837",
        1,
        "Gtid",
        "GTID 0-7-41",
    ),
    # ev.000001 @9587
    (
        "803a026ba2070000002a0000009d25000008002b000000000000000000000029020000000000ca7cfebb",
        1,
        "Gtid",
        "GTID 0-7-43 START ALTER",
    ),
    # ev.000001 @9725
    (
        "803a026ba2070000002d0000002a26000008002c000000000000000000000029042b00000000000000e12a3ff0",
        1,
        "Gtid",
        "GTID 0-7-44 COMMIT ALTER id=43",
    ),
    # ev.000001 @9957
    (
        "803a026ba507000000850000006a27000000000c000000000000000100001a0000000000010100002054000000000603"
        "737464042100210008006400815e789cf3f40b760d0a51f0f40bf1572851d028d3540873f409750d56d0504fcecf2d28"
        "4a2d2e4e4d51282e492c49cd4dcd2b51282c4d2daa54d0230aa86b020014bf18cecfceeea9",
        1,
        "Query_compressed",
        ("use `d`; INSERT INTO t (v) VALUES ('compressed statement query ......................................')"),
    ),
    # ev.000001 @10163
    (
        "803a026ba0070000006f000000222800000000494e5345525420494e544f2074202876292056414c554553202827636f"
        "6d7072657373656420726f77206576656e74202e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e"
        "2e2e2e2e2e2e2e2e2e2729deb62bf8",
        1,
        "Annotate_rows",
        ("INSERT INTO t (v) VALUES ('compressed row event ......................................')"),
    ),
    # ev.000001 @10274
    (
        "803a026b130700000043000000652800000000180000000000010001640001740004030f0503036400080e0101000201"
        "08040902696401760172017a08010037e45e2f",
        1,
        "Table_map",
        "table_id: 24 (d.t)",
    ),
    # ev.000001 @10341
    (
        "803a026ba60700000049000000ae28000000001800000000000100040f8141789cfba3ccc0c0609d9c9f5b50945a5c9c"
        "9aa250945fae905a969a57a2a0471400006ab0103e7d267b37",
        1,
        "Write_rows_compressed_v1",
        "table_id: 24 flags: STMT_END_F",
    ),
    # ev.000002 @385
    (
        "a63a026ba20700000030000000b101000008002f00000000000000000000004c0100000002027a7a616201ff38ce4a1e",
        1,
        "Gtid",
        "XA START X'7a7a',X'6162',1 GTID 0-7-47",
    ),
    # ev.000002 @828
    (
        "a63a026ba2070000002e0000006a03000008003100000000000000000000004c0100000002006b6b01ff11ab01c3",
        1,
        "Gtid",
        "XA START X'6b6b',X'',1 GTID 0-7-49",
    ),
    # ev.000002 @1086
    (
        "a63a026b260700000026000000640400000000000100000002000000000000006b6bab231c78",
        1,
        "XA_prepare",
        "XA PREPARE X'6b6b',X'',1",
    ),
    # ev.000002 @1617
    (
        "a63a026b13070000005f000000b0060000000019000000000001000164000175000503fefefef608fe03f701f8010a02"
        "1e010140020108040e0269640163016501730464636f6c0a01080505020178017906050201610162080100955423ef",
        1,
        "Table_map",
        "table_id: 25 (d.u)",
    ),
    # ev.000002 @2085
    (
        "a63a026b18070000003e0000006308000000001900000000000000051f1fe001000000016101018000000132e0010000"
        "00017a01018000000132eff5017c",
        1,
        "Update_rows_v1",
        "table_id: 25",
    ),
    # ev.000002 @2147
    (
        "a63a026b18070000003a0000009d08000000001800000000000100040f0ffc01000000022d35f801000000022d350000"
        "000000000840565647f4",
        1,
        "Update_rows_v1",
        "table_id: 24 flags: STMT_END_F",
    ),
    # ev.000003 @256
    (
        "a63a026ba307000000270000002701000000000100000000000000070000003600000000000000",
        0,
        "Gtid_list",
        "[0-7-54]",
    ),
    # ev.000003 @334
    (
        "a63a026ba207000000260000007401000008003700000000000000000000000c000000000000",
        0,
        "Gtid",
        "BEGIN GTID 0-7-55",
    ),
    # ev.000003 @563
    (
        "a63a026b0e070000002c0000005f0200000000020000006e6e00020800000008000000030000000000000000",
        0,
        "User var",
        "@`nn`=3",
    ),
    # ev.000004 @603
    (
        "a83a026ba2070000002c0000008702000008003a00000000000000000000000ea0000000000000005547dd8b",
        1,
        "Gtid",
        "BEGIN GTID 0-7-58 cid=160",
    ),
    # ev.000006 @256
    (
        "ab3a026ba3070000006b0000006b01000000000500000001000000090000000100000000000000010000000700000002"
        "000000000000000200000007000000010000000000000000000000090000003c0000000000000000000000070000003d"
        "0000000000000008e86aa8",
        1,
        "Gtid_list",
        "[0-9-60,0-7-61,1-9-1,1-7-2,2-7-1]",
    ),
    # enc.000001 @256
    (
        "b03a026ba408000000280000002801000000000101000000b72f3700092e301d70e0264782b34e92",
        1,
        "Start_encryption",
        "",
    ),
)


# --- the oracle binlog files ------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_oracle_event_decodes_and_its_crc_verifies(n: int) -> None:
    events = events_of(n)
    assert events[0][0] == 4 and events[-1][0] + len(events[-1][1]) == len(oracle_file(n))
    for pos, ev, alg in events:
        parsed = parse_event(ev, alg, verify_crc=True)
        assert parsed.header.event_length == len(ev)
        assert parsed.header.log_pos == pos + len(ev), "log_pos is the end position in a real binlog"
        assert not isinstance(parsed.body, UnknownBody), f"type {parsed.header.type_code} at {pos}"
        assert (parsed.crc is not None) == (alg == 1 or parsed.header.type_code == FORMAT_DESCRIPTION_EVENT)


def test_file_without_crc_still_has_a_crc_on_its_fde() -> None:
    (_, fde, alg), *rest = events_of(3)
    assert alg == 0
    assert crc_ok(fde)
    assert parse_event(fde, 0).crc == int.from_bytes(fde[-4:], "little")
    gtid = next(ev for _, ev, _ in rest if ev[4] == GTID_EVENT)
    assert len(gtid) == 19 + 19, "CRC-less GTID event: header + 19-byte body, nothing more"
    assert parse_event(gtid, 0).crc is None
    # Read as if it had a CRC, the last 4 body bytes would be taken for one and the body is too short.
    with pytest.raises(EventDecodeError):
        parse_event(gtid, 1)


def test_describe_matches_show_binlog_events_for_every_row() -> None:
    rows = show_binlog_events()
    seen = 0
    for n in (1, 2):
        name = f"mysql-bin.00000{n}"
        for pos, ev, alg in events_of(n):
            etype, server_id, end_pos, info = rows[(name, pos)]
            header = parse_header(ev)
            assert (header.server_id, header.log_pos) == (server_id, end_pos)
            assert describe(ev, alg) == (etype, info), f"{name} at {pos}"
            seen += 1
    assert seen == len(rows) == 67


def test_known_values_in_oracle_file_1() -> None:
    ev, alg = event_at(1, 631)
    parsed = parse_event(ev, alg)
    assert parsed.header == EventHeader(parsed.header.timestamp, GTID_EVENT, 1, 42, 673, 0x0008)
    assert parsed.body == GtidBody(seq_no=3, domain_id=0, flags2=0x0C)

    fde = parse_event(*event_at(1, 4)).body
    assert isinstance(fde, FormatDescriptionBody)
    assert (fde.binlog_version, fde.server_version, fde.header_len, fde.checksum_alg) == (4, SERVER_VERSION, 19, 1)
    assert fde.number_of_event_types == 171

    assert parse_event(*event_at(1, 256)).body == GtidListBody(())
    assert parse_event(*event_at(1, 285)).body == BinlogCheckpointBody(b"mysql-bin.000001")
    assert parse_event(*event_at(1, 328)).body == GtidBody(1, 0, FL_STANDALONE | 0x28)
    assert parse_event(*event_at(1, 673)).body == AnnotateRowsBody(b"INSERT INTO d.t VALUES (1,'normal autocommit')")
    assert parse_event(*event_at(1, 842)).body == XidBody(5)
    assert parse_event(*event_at(1, 3246)).body == RotateBody(4, b"mysql-bin.000002")

    table_map = parse_event(*event_at(1, 742)).body
    assert table_map == TableMapBody(
        table_id=18,
        flags=1,
        db=b"d",
        table=b"t",
        column_count=2,
        column_types=b"\x03\x0f",
        metadata=b"\x28\x00",
        null_bitmap=b"\x02",
    )
    rows = parse_event(*event_at(1, 786)).body
    assert isinstance(rows, RowsBody)
    assert (rows.table_id, rows.flags, rows.extra_data) == (18, 1, None)
    assert rows.data.startswith(b"\x02\x03")  # 2 columns, both present

    user_var = parse_event(*event_at(1, 2850)).body
    assert user_var == UserVarBody(b"uv", False, type=0, charset=33, value=b"user var")

    query = parse_event(*event_at(1, 370)).body
    assert isinstance(query, QueryBody)
    assert (query.thread_id, query.exec_time, query.error_code, query.db, query.query) == (
        5,
        0,
        0,
        b"d",
        b"CREATE DATABASE d",
    )
    assert query.status_vars == {
        Q_FLAGS2_CODE: 0x0100_0000,  # stored as 00 00 00 01
        Q_SQL_MODE_CODE: 0x5420_0000,  # stored as 00 00 20 54 00 00 00 00
        Q_CATALOG_NZ_CODE: b"std",
        Q_CHARSET_CODE: QueryCharset(33, 33, 8),
    }
    assert query.unknown_status_vars == b""


def test_known_values_in_oracle_file_2() -> None:
    header = parse_header(event_at(2, 4)[0])
    assert header.flags & LOG_EVENT_BINLOG_IN_USE_F, "file 2 was the active file: its FDE is flagged in use"
    assert parse_event(*event_at(2, 256)).body == GtidListBody((Gtid(0, 1, 12),))
    assert str(Gtid(0, 1, 12)) == "0-1-12"
    assert parse_event(*event_at(2, 581)).body == BinlogCheckpointBody(b"mysql-bin.000002")
    gtid = parse_event(*event_at(2, 342))
    assert (gtid.header.server_id, gtid.body) == (1, GtidBody(13, 0, 0x0C))


def test_fde_post_header_table_is_mariadb_10_11s() -> None:
    for n in (1, 2, 3):
        body = parse_event(*event_at(n, 4)).body
        assert isinstance(body, FormatDescriptionBody)
        assert body.post_header_lengths == MARIADB_10_11_POST_HEADER_LENGTHS
    assert len(MARIADB_10_11_POST_HEADER_LENGTHS) == 171
    assert MARIADB_10_11_POST_HEADER_LENGTHS[GTID_EVENT - 1] == 19
    assert MARIADB_10_11_POST_HEADER_LENGTHS[QUERY_EVENT - 1] == 13


@pytest.mark.parametrize("n", [1, 3])
def test_fde_is_rebuilt_byte_for_byte(n: int) -> None:
    ev, _ = event_at(n, 4)
    header = parse_header(ev)
    original = parse_event(ev, 0).body
    assert isinstance(original, FormatDescriptionBody)
    body = FormatDescriptionBody.mariadb_10_11(SERVER_VERSION, original.create_timestamp, original.checksum_alg)
    rebuilt = build_event(
        timestamp=header.timestamp,
        type_code=FORMAT_DESCRIPTION_EVENT,
        server_id=1,
        log_pos=256,
        flags=header.flags,
        body=encode_format_description(body),
        checksum=False,
    )
    assert rebuilt == ev, "an FDE always carries a CRC, even when the file's algorithm is OFF"


# --- CRC rules ------------------------------------------------------------------------------------------


def test_in_use_fde_crc_is_computed_with_the_flag_clear() -> None:
    fde, _ = event_at(2, 4)
    stored = int.from_bytes(fde[-4:], "little")
    assert zlib.crc32(fde[:-4]) != stored, "a plain CRC over the flagged bytes does not match"
    cleared = bytearray(fde)
    cleared[17] &= ~LOG_EVENT_BINLOG_IN_USE_F
    assert zlib.crc32(bytes(cleared[:-4])) == stored
    assert event_crc(fde[:-4]) == stored
    assert crc_ok(fde) and crc_ok(bytes(cleared))
    parse_event(fde, 1, verify_crc=True)


def test_in_use_flag_does_not_change_a_built_fde_crc() -> None:
    body = encode_format_description(FormatDescriptionBody.mariadb_10_11(SERVER_VERSION))
    plain = build_event(type_code=FORMAT_DESCRIPTION_EVENT, body=body, checksum=True, log_pos=256)
    in_use = build_event(
        type_code=FORMAT_DESCRIPTION_EVENT, body=body, checksum=True, log_pos=256, flags=LOG_EVENT_BINLOG_IN_USE_F
    )
    assert plain[-4:] == in_use[-4:]
    assert plain[:17] == in_use[:17] and in_use[17] == 1


def test_in_use_rule_applies_only_to_fdes() -> None:
    xid = build_event(type_code=XID_EVENT, body=encode_xid(XidBody(9)), checksum=True, flags=1)
    assert int.from_bytes(xid[-4:], "little") == zlib.crc32(xid[:-4])


def test_crc_mismatch_is_detected_on_request() -> None:
    ev, alg = event_at(1, 842)
    bad = ev[:-1] + bytes([ev[-1] ^ 1])
    assert not crc_ok(bad)
    assert parse_event(bad, alg).body == XidBody(5), "not verified unless asked"
    with pytest.raises(EventDecodeError, match="CRC"):
        parse_event(bad, alg, verify_crc=True)
    assert with_crc(bad) == ev


# --- rebuilding real events ----------------------------------------------------------------------------

ENCODERS = {
    ROTATE_EVENT: encode_rotate,
    QUERY_EVENT: encode_query,
    XID_EVENT: encode_xid,
    GTID_EVENT: encode_gtid,
    GTID_LIST_EVENT: encode_gtid_list,
    BINLOG_CHECKPOINT_EVENT: encode_binlog_checkpoint,
    ANNOTATE_ROWS_EVENT: encode_annotate_rows,
    USER_VAR_EVENT: encode_user_var,
    INTVAR_EVENT: encode_intvar,
    RAND_EVENT: encode_rand,
    TABLE_MAP_EVENT: encode_table_map,
    START_ENCRYPTION_EVENT: encode_start_encryption,
    FORMAT_DESCRIPTION_EVENT: encode_format_description,
}


def _rebuild(ev: bytes, alg: int) -> bytes | None:
    parsed = parse_event(ev, alg)
    h = parsed.header
    if isinstance(parsed.body, RowsBody):
        body = encode_rows(parsed.body)
    elif h.type_code == QUERY_COMPRESSED_EVENT:
        return None  # recompression need not reproduce the server's zlib bytes
    elif h.type_code in ENCODERS:
        body = ENCODERS[h.type_code](parsed.body)
    else:
        return None
    return build_event(
        timestamp=h.timestamp,
        type_code=h.type_code,
        server_id=h.server_id,
        log_pos=h.log_pos,
        flags=h.flags,
        body=body,
        checksum=alg == 1,
    )


@pytest.mark.parametrize("n", [1, 2, 3])
def test_decode_then_encode_reproduces_every_oracle_event(n: int) -> None:
    for pos, ev, alg in events_of(n):
        rebuilt = _rebuild(ev, alg)
        assert rebuilt is not None, f"no encoder for the event at {pos}"
        assert rebuilt == ev, f"event at {pos}"


def test_decode_then_encode_reproduces_real_events() -> None:
    rebuilt = 0
    for hex_event, alg, _, _ in REAL_EVENTS:
        ev = bytes.fromhex(hex_event)
        out = _rebuild(ev, alg)
        if out is not None:
            assert out == ev, parse_event(ev, alg)
            rebuilt += 1
    assert rebuilt >= 40


def test_real_fake_stream_events_are_built_byte_for_byte() -> None:
    # A heartbeat and a fake GTID_LIST as a real 10.11 primary sent them (cap4_block_hb1s, gtid_0-1-4_cap4).
    heartbeat = bytes.fromhex("000000001b01000000270000007002000000006d7973716c2d62696e2e3030303030323373a72f")
    built = build_event(
        type_code=HEARTBEAT_LOG_EVENT,
        server_id=1,
        log_pos=624,
        body=encode_heartbeat(HeartbeatBody(b"mysql-bin.000002")),
        checksum=True,
    )
    assert built == heartbeat
    assert parse_event(heartbeat, 1).body == HeartbeatBody(b"mysql-bin.000002")
    fake_list = bytes.fromhex("00000000a3010000002b0000005704000020000100000000000000010000000400000000000000899ef880")
    built = build_event(
        type_code=GTID_LIST_EVENT,
        server_id=1,
        log_pos=1111,
        flags=LOG_EVENT_ARTIFICIAL_F,
        body=encode_gtid_list(GtidListBody((Gtid(0, 1, 4),))),
        checksum=True,
    )
    assert built == fake_list
    fake_rotate = bytes.fromhex(
        "0000000004010000002f00000000000000200004000000000000006d7973716c2d62696e2e3030303030311f0eac68"
    )
    built = build_event(
        type_code=ROTATE_EVENT,
        server_id=1,
        flags=LOG_EVENT_ARTIFICIAL_F,
        body=encode_rotate(RotateBody(4, b"mysql-bin.000001")),
        checksum=True,
    )
    assert built == fake_rotate


def test_empty_gtid_list_is_padded_to_six_bytes() -> None:
    body = encode_gtid_list(GtidListBody(()))
    assert body == b"\0" * 6
    ev, _ = event_at(1, 256)
    assert ev[19:-4] == body
    assert parse_gtid_list(body) == GtidListBody(())


# --- REAL_EVENTS: more kinds of events ------------------------------------------------------------------


@pytest.mark.parametrize(("hex_event", "alg", "etype", "info"), REAL_EVENTS, ids=lambda v: str(v)[:20])
def test_describe_matches_a_real_server(hex_event: str, alg: int, etype: str, info: str) -> None:
    ev = bytes.fromhex(hex_event)
    assert describe(ev, alg) == (etype, info)
    if alg == 1:
        assert crc_ok(ev)


def test_real_event_bodies() -> None:
    by_info = {info: (bytes.fromhex(h), alg) for h, alg, _, info in REAL_EVENTS}

    def body(info: str) -> object:
        return parse_event(*by_info[info]).body

    assert body("@`u`=18446744073709551615") == UserVarBody(b"u", False, type=2, charset=8, value=b"\xff" * 8, flags=1)
    assert body("@`n`=NULL") == UserVarBody(b"n", True)
    assert body("rand_seed1=716841884,rand_seed2=281293729") == RandBody(716841884, 281293729)
    assert body("LAST_INSERT_ID=19") == IntvarBody(1, 19)
    xa_gtid = body("XA START X'7a7a',X'6162',1 GTID 0-7-47")
    assert isinstance(xa_gtid, GtidBody) and xa_gtid.flags2 & FL_PREPARED_XA
    assert xa_gtid.xa == XaId(1, b"zz", b"ab")
    cid = body("BEGIN GTID 0-7-58 cid=160")
    assert isinstance(cid, GtidBody) and cid.flags2 & FL_GROUP_COMMIT_ID and cid.commit_id == 160
    alter = body("GTID 0-7-44 COMMIT ALTER id=43")
    assert isinstance(alter, GtidBody) and (alter.flags_extra, alter.sa_seq_no) == (4, 43)
    compressed_ev = by_info[
        "use `d`; INSERT INTO t (v) VALUES ('compressed statement query ......................................')"
    ]
    assert compressed_ev[0][4] == QUERY_COMPRESSED_EVENT
    compressed = parse_event(*compressed_ev).body
    assert isinstance(compressed, QueryBody) and compressed.query.endswith(b"......')")
    encryption = body("")
    assert isinstance(encryption, StartEncryptionBody)
    assert (encryption.scheme, encryption.key_version, len(encryption.nonce)) == (1, 1, 12)


# --- encoders: decode(encode(x)) == x -----------------------------------------------------------------


ROUND_TRIPS = [
    (encode_rotate, RotateBody(123456789012, b"binlog.000042")),
    (encode_xid, XidBody(2**64 - 1)),
    (encode_gtid, GtidBody(7, 3, FL_STANDALONE)),
    (encode_gtid, GtidBody(2**64 - 1, 2**32 - 1, FL_GROUP_COMMIT_ID | 0x0C, commit_id=99)),
    (encode_gtid, GtidBody(5, 1, FL_PREPARED_XA, xa=XaId(1, b"g" * 64, b"b" * 64), flags_extra=1, extra_engines=2)),
    (encode_gtid, GtidBody(6, 1, FL_STANDALONE, flags_extra=4 | 1, extra_engines=255, sa_seq_no=5)),
    (encode_gtid, GtidBody(6, 1, FL_STANDALONE, flags_extra=2)),
    (encode_gtid_list, GtidListBody(())),
    (encode_gtid_list, GtidListBody((Gtid(0, 1, 2), Gtid(5, 2**32 - 1, 2**64 - 1)), GTID_LIST_FLAG_UNTIL_REACHED)),
    (encode_binlog_checkpoint, BinlogCheckpointBody(b"mysql-bin.000001")),
    (encode_annotate_rows, AnnotateRowsBody(b"INSERT INTO t VALUES (1)")),
    (encode_user_var, UserVarBody(b"!dummyvar", True)),
    (encode_user_var, UserVarBody(b"x", False, 2, 63, b"\x01" * 8, 1)),
    (encode_user_var, UserVarBody(b"", False, 0, 33, b"", None)),
    (encode_intvar, IntvarBody(2, 2**64 - 1)),
    (encode_rand, RandBody(1, 2**64 - 1)),
    (encode_heartbeat, HeartbeatBody(b"mysql-bin.000009")),
    (encode_start_encryption, StartEncryptionBody(1, 7, bytes(range(12)))),
    (encode_incident, IncidentBody(1, b"lost")),
    (
        encode_table_map,
        TableMapBody(2**48 - 1, 1, b"db", b"tb", 300, b"\x0f" * 300, b"\x01" * 600, b"\xff" * 38, b"\x01\x01\x00"),
    ),
    (encode_format_description, FormatDescriptionBody.mariadb_10_11("10.11.6-MariaDB-log", 7, 0)),
]


@pytest.mark.parametrize(("encoder", "value"), ROUND_TRIPS, ids=lambda v: getattr(v, "__name__", type(v).__name__))
def test_encoders_round_trip(encoder, value) -> None:  # type: ignore[no-untyped-def]
    type_code = {
        encode_rotate: ROTATE_EVENT,
        encode_xid: XID_EVENT,
        encode_gtid: GTID_EVENT,
        encode_gtid_list: GTID_LIST_EVENT,
        encode_binlog_checkpoint: BINLOG_CHECKPOINT_EVENT,
        encode_annotate_rows: ANNOTATE_ROWS_EVENT,
        encode_user_var: USER_VAR_EVENT,
        encode_intvar: INTVAR_EVENT,
        encode_rand: RAND_EVENT,
        encode_heartbeat: HEARTBEAT_LOG_EVENT,
        encode_start_encryption: START_ENCRYPTION_EVENT,
        encode_incident: 26,
        encode_table_map: TABLE_MAP_EVENT,
        encode_format_description: FORMAT_DESCRIPTION_EVENT,
    }[encoder]
    for checksum in (True, False):
        ev = build_event(type_code=type_code, body=encoder(value), checksum=checksum, server_id=3, log_pos=1000)
        assert parse_event(ev, 1 if checksum else 0, verify_crc=True).body == value


def test_gtid_body_is_padded_to_19_bytes() -> None:
    assert len(encode_gtid(GtidBody(1, 0, FL_STANDALONE))) == 19
    assert len(encode_gtid(GtidBody(1, 0, FL_GROUP_COMMIT_ID, commit_id=5))) == 21
    with pytest.raises(ValueError):
        encode_gtid(GtidBody(1, 0, FL_GROUP_COMMIT_ID))  # flag without commit id
    with pytest.raises(EventDecodeError):
        parse_gtid(encode_gtid(GtidBody(1, 0, 0))[:18])


def test_query_round_trip_with_every_known_status_var() -> None:
    status = {
        Q_FLAGS2_CODE: 0x0400_0000,
        Q_SQL_MODE_CODE: 2**64 - 1,
        Q_CATALOG_CODE: b"old",
        Q_AUTO_INCREMENT: AutoIncrement(5, 2),
        Q_CHARSET_CODE: QueryCharset(33, 33, 8),
        Q_TIME_ZONE_CODE: b"+01:00",
        Q_CATALOG_NZ_CODE: b"std",
        Q_LC_TIME_NAMES_CODE: 3,
        Q_CHARSET_DATABASE_CODE: 45,
        Q_TABLE_MAP_FOR_UPDATE_CODE: 6,
        Q_INVOKER: Invoker(b"root", b"localhost"),
        Q_UPDATED_DB_NAMES: UpdatedDbNames((b"a", b"bb")),
        Q_MICROSECONDS: 999999,
        Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP: 1,
        Q_DDL_LOGGED_WITH_XID: 77,
        Q_HRNOW: 123456,
        Q_XID: 2**63,
        Q_GTID_FLAGS3: GtidFlags3(4, 41),
    }
    body = QueryBody(9, 1, 1062, b"db", b"SELECT 1", status, unknown_status_vars=b"\x83\x01\x02")
    for compressed in (False, True):
        type_code = QUERY_COMPRESSED_EVENT if compressed else QUERY_EVENT
        ev = build_event(type_code=type_code, body=encode_query(body, compressed=compressed), checksum=True)
        assert parse_event(ev, 1).body == body
    over = QueryBody(1, 0, 0, b"", b"x", {Q_UPDATED_DB_NAMES: UpdatedDbNames((), over_max=True)})
    assert parse_query(encode_query(over)) == over
    # MySQL: a count above 16 (MAX_DBS_IN_EVENT_MTS) means "too many to list", with no names following.
    assert parse_status_vars(bytes((Q_UPDATED_DB_NAMES, 17))) == ({Q_UPDATED_DB_NAMES: UpdatedDbNames((), True)}, b"")
    assert parse_status_vars(bytes((Q_UPDATED_DB_NAMES, 1)) + b"db\0")[0] == {
        Q_UPDATED_DB_NAMES: UpdatedDbNames((b"db",))
    }


def test_unknown_status_var_stops_decoding_and_is_kept() -> None:
    raw = b"\x00\x01\x00\x00\x00" + b"\x0e\x05garbage" + b"\x00\x02\x00\x00\x00"
    values, tail = parse_status_vars(raw)
    assert values == {Q_FLAGS2_CODE: 1}
    assert tail == raw[5:], "everything from the unknown code (14) on is left undecoded"
    with pytest.raises(EventDecodeError):
        parse_status_vars(b"\x01\x00\x00")  # sql_mode needs 8 bytes


def test_query_text_location_does_not_depend_on_status_var_decoding() -> None:
    body = struct.pack("<IIBHH", 1, 0, 1, 0, 4) + b"\xfa\x01\x02\x03" + b"d\x00" + b"SELECT 2"
    parsed = parse_query(body)
    assert (parsed.db, parsed.query, parsed.status_vars, parsed.unknown_status_vars) == (
        b"d",
        b"SELECT 2",
        {},
        b"\xfa\x01\x02\x03",
    )


def test_compressed_query_payload() -> None:
    payload = compress_payload(b"x" * 300)
    assert payload[:3] == b"\x82\x01\x2c", "0x80|2 then 300 as 2 big-endian bytes"
    assert decompress_payload(payload) == b"x" * 300
    bad_payloads = (b"", b"\x00abc", b"\x85\x01", payload[:-3], b"\x81\x05not zlib", b"\x81\x00" + zlib.compress(b""))
    for bad in bad_payloads:
        with pytest.raises(EventDecodeError):
            decompress_payload(bad)
    short = b"\x81\x02" + zlib.compress(b"toolong")  # declares 2 bytes, inflates to 7
    with pytest.raises(EventDecodeError):
        decompress_payload(short)


def test_heartbeat_sub_header_when_log_pos_is_zero() -> None:
    body = encode_heartbeat(HeartbeatBody(b"bin.000001", 5 * 2**32))
    assert body[:8] == (5 * 2**32).to_bytes(8, "little")
    assert parse_heartbeat(body, 0) == HeartbeatBody(b"bin.000001", 5 * 2**32)
    assert parse_heartbeat(body, 1234) == HeartbeatBody(body)
    with pytest.raises(EventDecodeError):
        parse_heartbeat(b"short", 0)


def test_user_var_bounds() -> None:
    ok = encode_user_var(UserVarBody(b"abc", False, 0, 33, b"hello"))
    assert parse_user_var(ok).value == b"hello"
    with pytest.raises(EventDecodeError):
        parse_user_var(ok[:-1])  # value length runs past the body
    with pytest.raises(EventDecodeError):
        parse_user_var(b"\xff\x00\x00\x00abc\x01")  # name length runs past the body


def test_fixed_size_bodies_reject_wrong_sizes() -> None:
    with pytest.raises(EventDecodeError):
        parse_start_encryption(bytes(18))
    with pytest.raises(EventDecodeError):
        parse_incident(b"\x01\x00\x05abc")


# --- header and whole-event framing ---------------------------------------------------------------------


def test_parse_header_at_offset_and_short_buffers() -> None:
    ev, _ = event_at(1, 842)
    data = b"junk" + ev
    assert parse_header(data, 4) == parse_header(ev)
    assert parse_header(memoryview(data), 4).type_code == XID_EVENT
    assert parse_header(ev).type == XID_EVENT
    for args in ((ev[:18], 0), (data, len(data) - 18), (ev, -1)):
        with pytest.raises(EventDecodeError):
            parse_header(*args)


def test_event_length_must_match() -> None:
    ev, alg = event_at(1, 842)
    with pytest.raises(EventDecodeError, match="event_length"):
        parse_event(ev + b"\0", alg)
    with pytest.raises(EventDecodeError):
        parse_event(ev[:-1], alg)


def test_unknown_types_keep_raw_body_and_ignorable_flag() -> None:
    ev = build_event(type_code=50, body=b"abc", checksum=True, flags=LOG_EVENT_IGNORABLE_F)
    parsed = parse_event(ev, 1)
    assert parsed.body == UnknownBody(50, b"abc", True)
    assert parse_event(build_event(type_code=50, body=b"", checksum=False), 0).body == UnknownBody(50, b"", False)


def test_unknown_checksum_algorithm_is_a_decode_error() -> None:
    ev, _ = event_at(1, 842)
    with pytest.raises(EventDecodeError):
        parse_event(ev, 7)


def test_iter_binlog_rejects_bad_magic_and_truncation() -> None:
    data = oracle_file(2)
    with pytest.raises(EventDecodeError):
        list(iter_binlog(b"\xfebix" + data[4:]))
    with pytest.raises(EventDecodeError):
        list(iter_binlog(data[:-1]))


def test_fde_checksum_alg() -> None:
    assert fde_checksum_alg(event_at(1, 4)[0]) == 1
    assert fde_checksum_alg(event_at(3, 4)[0]) == 0
    with pytest.raises(EventDecodeError):
        fde_checksum_alg(event_at(1, 842)[0])


# --- describe: cases a real binlog cannot show -----------------------------------------------------------


def test_ignorable_events_are_described_as_mariadb_reads_them() -> None:
    unknown = build_event(type_code=50, body=b"whatever", checksum=True, flags=LOG_EVENT_IGNORABLE_F)
    assert describe(unknown, 1) == ("Ignorable log event", "# Ignorable event type 50 (Unknown)")
    flagged_query = build_event(type_code=QUERY_EVENT, body=b"not a query", checksum=False, flags=0x80)
    assert describe(flagged_query, 0) == ("Ignorable log event", "# Ignorable event type 2 (Query)")
    mysql_gtid = build_event(type_code=MYSQL_GTID_LOG_EVENT, body=bytes(42), checksum=True)
    assert describe(mysql_gtid, 1) == ("Ignorable log event", "# Ignorable event type 33 (MySQL Gtid)")


def test_describe_refuses_what_mariadb_cannot_read() -> None:
    for type_code, flags in ((50, 0), (172, LOG_EVENT_IGNORABLE_F), (0, 0), (7, 0)):
        with pytest.raises(EventDecodeError):
            describe(build_event(type_code=type_code, body=b"x", checksum=True, flags=flags), 1)
    assert (
        describe(build_event(type_code=172, body=b"", checksum=True, flags=0x80), 1, number_of_event_types=172)[0]
        == "Ignorable log event"
    )


def test_describe_other_events() -> None:
    def desc(type_code: int, body: bytes, **kw: int) -> tuple[str, str]:
        return describe(build_event(type_code=type_code, body=body, checksum=True, **kw), 1)

    assert desc(INTVAR_EVENT, encode_intvar(IntvarBody(2, 2**64 - 1))) == ("Intvar", "INSERT_ID=-1")
    assert desc(26, encode_incident(IncidentBody(1, b""))) == ("Incident", "#1 (LOST_EVENTS): ")
    assert desc(HEARTBEAT_LOG_EVENT, b"mysql-bin.000001", log_pos=4) == ("Heartbeat", "")
    rows = encode_rows(RowsBody(77, 0, b"\x01\x01", extra_data=b""))
    assert desc(WRITE_ROWS_EVENT, rows) == ("Write_rows", "table_id: 77")
    assert desc(WRITE_ROWS_EVENT_V1, encode_rows(RowsBody(77, 1, b""))) == (
        "Write_rows_v1",
        "table_id: 77 flags: STMT_END_F",
    )
    xa = GtidBody(5, 0, FL_PREPARED_XA | FL_STANDALONE, xa=XaId(1, b"\x0a", b""))
    assert desc(GTID_EVENT, encode_gtid(xa), server_id=2) == ("Gtid", "GTID X'0a',X'',1 GTID 0-2-5")
    query = QueryBody(1, 0, 0, b"a`b", b"SELECT 1", {Q_FLAGS2_CODE: 0})
    assert desc(QUERY_EVENT, encode_query(query)) == ("Query", "use `a``b`; SELECT 1")
    assert desc(QUERY_EVENT, encode_query(query), flags=0x08) == ("Query", "SELECT 1")
    name, info = describe_raw(build_event(type_code=ANNOTATE_ROWS_EVENT, body=b"\xe5\xff", checksum=False), 0)
    assert (name, info) == ("Annotate_rows", b"\xe5\xff"), "Info bytes are passed through unchanged"


def test_format_double_follows_my_gcvt() -> None:
    # The first five are what the real server printed (REAL_EVENTS); the rest follow the same rules.
    assert format_double(1.5e300) == "1.5e300"
    assert format_double(0.1) == "0.1"
    assert format_double(1e20) == "1e20"
    assert format_double(-2.5e-7) == "-0.00000025"
    assert format_double(123456789012345678.0) == "1.2345678901234568e17"
    assert format_double(1e14) == "100000000000000"
    assert format_double(1e15) == "1e15"
    assert format_double(1e-15) == "0.000000000000001"
    assert format_double(1e-16) == "1e-16"
    assert format_double(0.0) == "0"
    assert format_double(-3.0) == "-3"


def test_collation_names() -> None:
    assert collation_name(8) == ("latin1", "latin1_swedish_ci")
    assert collation_name(33) == ("utf8mb3", "utf8mb3_general_ci")
    assert collation_name(63) == ("binary", "binary")
    assert collation_name(2368) == ("utf8mb4", "utf8mb4_uca1400_swedish_ai_ci")
    assert collation_name(300) is None and collation_name(2048 + 21 * 8) is None
