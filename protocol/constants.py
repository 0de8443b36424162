"""Numbers of the MariaDB replication protocol (see shared/spec/dump-protocol.md sections 1-9).

Plain ints, not enums, so the hot path can compare them without attribute lookups on enum members.
"""

from __future__ import annotations

from typing import Final

# --- binlog file / event header -------------------------------------------------------------------
BINLOG_MAGIC: Final = b"\xfebin"
BIN_LOG_HEADER_SIZE: Final = 4
HEADER_LEN: Final = 19
CRC_LEN: Final = 4
ST_SERVER_VER_LEN: Final = 50
LOG_EVENT_TYPES: Final = 171  # entries in a MariaDB 10.x FDE post-header array
MAX_EVENT_SIZE: Final = 1 << 30  # MariaDB's slave_max_allowed_packet / dump max_allowed_packet (1 GiB)

# header offsets
EVENT_TYPE_OFFSET: Final = 4
SERVER_ID_OFFSET: Final = 5
EVENT_LEN_OFFSET: Final = 9
LOG_POS_OFFSET: Final = 13
FLAGS_OFFSET: Final = 17

# header flags
LOG_EVENT_BINLOG_IN_USE_F: Final = 0x0001
LOG_EVENT_THREAD_SPECIFIC_F: Final = 0x0004
LOG_EVENT_SUPPRESS_USE_F: Final = 0x0008
LOG_EVENT_ARTIFICIAL_F: Final = 0x0020
LOG_EVENT_RELAY_LOG_F: Final = 0x0040
LOG_EVENT_IGNORABLE_F: Final = 0x0080
LOG_EVENT_NO_FILTER_F: Final = 0x0100
LOG_EVENT_MTS_ISOLATE_F: Final = 0x0200
LOG_EVENT_ACCEPT_OWN_F: Final = 0x4000
LOG_EVENT_SKIP_REPLICATION_F: Final = 0x8000

# checksum algorithms (FDE byte)
BINLOG_CHECKSUM_ALG_OFF: Final = 0
BINLOG_CHECKSUM_ALG_CRC32: Final = 1
BINLOG_CHECKSUM_ALG_UNDEF: Final = 255

# --- event types ------------------------------------------------------------------------------------
UNKNOWN_EVENT: Final = 0
START_EVENT_V3: Final = 1
QUERY_EVENT: Final = 2
STOP_EVENT: Final = 3
ROTATE_EVENT: Final = 4
INTVAR_EVENT: Final = 5
LOAD_EVENT: Final = 6
SLAVE_EVENT: Final = 7
CREATE_FILE_EVENT: Final = 8
APPEND_BLOCK_EVENT: Final = 9
EXEC_LOAD_EVENT: Final = 10
DELETE_FILE_EVENT: Final = 11
NEW_LOAD_EVENT: Final = 12
RAND_EVENT: Final = 13
USER_VAR_EVENT: Final = 14
FORMAT_DESCRIPTION_EVENT: Final = 15
XID_EVENT: Final = 16
BEGIN_LOAD_QUERY_EVENT: Final = 17
EXECUTE_LOAD_QUERY_EVENT: Final = 18
TABLE_MAP_EVENT: Final = 19
PRE_GA_WRITE_ROWS_EVENT: Final = 20
PRE_GA_UPDATE_ROWS_EVENT: Final = 21
PRE_GA_DELETE_ROWS_EVENT: Final = 22
WRITE_ROWS_EVENT_V1: Final = 23
UPDATE_ROWS_EVENT_V1: Final = 24
DELETE_ROWS_EVENT_V1: Final = 25
INCIDENT_EVENT: Final = 26
HEARTBEAT_LOG_EVENT: Final = 27
IGNORABLE_LOG_EVENT: Final = 28
ROWS_QUERY_LOG_EVENT: Final = 29
WRITE_ROWS_EVENT: Final = 30
UPDATE_ROWS_EVENT: Final = 31
DELETE_ROWS_EVENT: Final = 32
MYSQL_GTID_LOG_EVENT: Final = 33
ANONYMOUS_GTID_LOG_EVENT: Final = 34
PREVIOUS_GTIDS_LOG_EVENT: Final = 35
TRANSACTION_CONTEXT_EVENT: Final = 36
VIEW_CHANGE_EVENT: Final = 37
XA_PREPARE_LOG_EVENT: Final = 38

ANNOTATE_ROWS_EVENT: Final = 160
BINLOG_CHECKPOINT_EVENT: Final = 161
GTID_EVENT: Final = 162
GTID_LIST_EVENT: Final = 163
START_ENCRYPTION_EVENT: Final = 164
QUERY_COMPRESSED_EVENT: Final = 165
WRITE_ROWS_COMPRESSED_EVENT_V1: Final = 166
UPDATE_ROWS_COMPRESSED_EVENT_V1: Final = 167
DELETE_ROWS_COMPRESSED_EVENT_V1: Final = 168
WRITE_ROWS_COMPRESSED_EVENT: Final = 169
UPDATE_ROWS_COMPRESSED_EVENT: Final = 170
DELETE_ROWS_COMPRESSED_EVENT: Final = 171

# The rows events by what they do (v1, v2 and MariaDB's compressed forms): the applier and binlogd show read all six.
WRITE_ROWS_TYPES: Final = frozenset({WRITE_ROWS_EVENT_V1, WRITE_ROWS_EVENT, WRITE_ROWS_COMPRESSED_EVENT_V1,
                                     WRITE_ROWS_COMPRESSED_EVENT})
UPDATE_ROWS_TYPES: Final = frozenset({UPDATE_ROWS_EVENT_V1, UPDATE_ROWS_EVENT, UPDATE_ROWS_COMPRESSED_EVENT_V1,
                                      UPDATE_ROWS_COMPRESSED_EVENT})
DELETE_ROWS_TYPES: Final = frozenset({DELETE_ROWS_EVENT_V1, DELETE_ROWS_EVENT, DELETE_ROWS_COMPRESSED_EVENT_V1,
                                      DELETE_ROWS_COMPRESSED_EVENT})
COMPRESSED_ROWS_TYPES: Final = frozenset({WRITE_ROWS_COMPRESSED_EVENT_V1, UPDATE_ROWS_COMPRESSED_EVENT_V1,
                                          DELETE_ROWS_COMPRESSED_EVENT_V1, WRITE_ROWS_COMPRESSED_EVENT,
                                          UPDATE_ROWS_COMPRESSED_EVENT, DELETE_ROWS_COMPRESSED_EVENT})

ROWS_EVENT_TYPES: Final = frozenset(
    {
        WRITE_ROWS_EVENT_V1, UPDATE_ROWS_EVENT_V1, DELETE_ROWS_EVENT_V1,
        WRITE_ROWS_EVENT, UPDATE_ROWS_EVENT, DELETE_ROWS_EVENT,
        WRITE_ROWS_COMPRESSED_EVENT_V1, UPDATE_ROWS_COMPRESSED_EVENT_V1, DELETE_ROWS_COMPRESSED_EVENT_V1,
        WRITE_ROWS_COMPRESSED_EVENT, UPDATE_ROWS_COMPRESSED_EVENT, DELETE_ROWS_COMPRESSED_EVENT,
    }
)

# Names as SHOW BINLOG EVENTS prints them (MariaDB Log_event::get_type_str).
EVENT_TYPE_NAMES: Final[dict[int, str]] = {
    UNKNOWN_EVENT: "Unknown", START_EVENT_V3: "Start_v3", QUERY_EVENT: "Query", STOP_EVENT: "Stop",
    ROTATE_EVENT: "Rotate", INTVAR_EVENT: "Intvar", LOAD_EVENT: "Load", SLAVE_EVENT: "Slave",
    CREATE_FILE_EVENT: "Create_file", APPEND_BLOCK_EVENT: "Append_block", EXEC_LOAD_EVENT: "Exec_load",
    DELETE_FILE_EVENT: "Delete_file", NEW_LOAD_EVENT: "New_load", RAND_EVENT: "RAND",
    USER_VAR_EVENT: "User var", FORMAT_DESCRIPTION_EVENT: "Format_desc", XID_EVENT: "Xid",
    BEGIN_LOAD_QUERY_EVENT: "Begin_load_query", EXECUTE_LOAD_QUERY_EVENT: "Execute_load_query",
    TABLE_MAP_EVENT: "Table_map", PRE_GA_WRITE_ROWS_EVENT: "Write_rows_event_old",
    PRE_GA_UPDATE_ROWS_EVENT: "Update_rows_event_old", PRE_GA_DELETE_ROWS_EVENT: "Delete_rows_event_old",
    WRITE_ROWS_EVENT_V1: "Write_rows_v1", UPDATE_ROWS_EVENT_V1: "Update_rows_v1",
    DELETE_ROWS_EVENT_V1: "Delete_rows_v1", INCIDENT_EVENT: "Incident", HEARTBEAT_LOG_EVENT: "Heartbeat",
    IGNORABLE_LOG_EVENT: "Ignorable log event", ROWS_QUERY_LOG_EVENT: "MySQL Rows_query",
    WRITE_ROWS_EVENT: "Write_rows",
    UPDATE_ROWS_EVENT: "Update_rows", DELETE_ROWS_EVENT: "Delete_rows", MYSQL_GTID_LOG_EVENT: "MySQL Gtid",
    ANONYMOUS_GTID_LOG_EVENT: "MySQL Anonymous_Gtid", PREVIOUS_GTIDS_LOG_EVENT: "MySQL Previous_gtids",
    TRANSACTION_CONTEXT_EVENT: "Transaction_context", VIEW_CHANGE_EVENT: "View_change",
    XA_PREPARE_LOG_EVENT: "XA_prepare", ANNOTATE_ROWS_EVENT: "Annotate_rows",
    BINLOG_CHECKPOINT_EVENT: "Binlog_checkpoint", GTID_EVENT: "Gtid", GTID_LIST_EVENT: "Gtid_list",
    START_ENCRYPTION_EVENT: "Start_encryption", QUERY_COMPRESSED_EVENT: "Query_compressed",
    WRITE_ROWS_COMPRESSED_EVENT_V1: "Write_rows_compressed_v1",
    UPDATE_ROWS_COMPRESSED_EVENT_V1: "Update_rows_compressed_v1",
    DELETE_ROWS_COMPRESSED_EVENT_V1: "Delete_rows_compressed_v1",
    WRITE_ROWS_COMPRESSED_EVENT: "Write_rows_compressed", UPDATE_ROWS_COMPRESSED_EVENT: "Update_rows_compressed",
    DELETE_ROWS_COMPRESSED_EVENT: "Delete_rows_compressed",
}

# GTID event flags2
FL_STANDALONE: Final = 1
FL_GROUP_COMMIT_ID: Final = 2
FL_TRANSACTIONAL: Final = 4
FL_ALLOW_PARALLEL: Final = 8
FL_WAITED: Final = 16
FL_DDL: Final = 32
FL_PREPARED_XA: Final = 64
FL_COMPLETED_XA: Final = 128

# GTID_LIST count_and_flags
GTID_LIST_COUNT_MASK: Final = 0x0FFFFFFF
GTID_LIST_FLAG_UNTIL_REACHED: Final = 1 << 28
GTID_LIST_FLAG_IGN_GTIDS: Final = 1 << 29

# QUERY status variable codes
Q_FLAGS2_CODE: Final = 0
Q_SQL_MODE_CODE: Final = 1
Q_CATALOG_CODE: Final = 2
Q_AUTO_INCREMENT: Final = 3
Q_CHARSET_CODE: Final = 4
Q_TIME_ZONE_CODE: Final = 5
Q_CATALOG_NZ_CODE: Final = 6
Q_LC_TIME_NAMES_CODE: Final = 7
Q_CHARSET_DATABASE_CODE: Final = 8
Q_TABLE_MAP_FOR_UPDATE_CODE: Final = 9
Q_MASTER_DATA_WRITTEN_CODE: Final = 10
Q_INVOKER: Final = 11
Q_UPDATED_DB_NAMES: Final = 12
Q_MICROSECONDS: Final = 13
Q_COMMIT_TS: Final = 14
Q_COMMIT_TS2: Final = 15
Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP: Final = 16
Q_DDL_LOGGED_WITH_XID: Final = 17
Q_DEFAULT_COLLATION_FOR_UTF8MB4: Final = 18
Q_SQL_REQUIRE_PRIMARY_KEY: Final = 19
Q_DEFAULT_TABLE_ENCRYPTION: Final = 20
Q_HRNOW: Final = 128
Q_XID: Final = 129
Q_GTID_FLAGS3: Final = 130
Q_CHARACTER_SET_COLLATIONS: Final = 131

# INTVAR types
INTVAR_INVALID: Final = 0
INTVAR_LAST_INSERT_ID: Final = 1
INTVAR_INSERT_ID: Final = 2

# --- replica capability (@mariadb_slave_capability) ------------------------------------------------
CAP_UNKNOWN: Final = 0
CAP_ANNOTATE: Final = 1
CAP_TOLERATE_HOLES: Final = 2
CAP_BINLOG_CHECKPOINT: Final = 3
CAP_GTID: Final = 4
CAP_MINE: Final = 4

# --- commands ------------------------------------------------------------------------------------------
COM_QUIT: Final = 0x01
COM_QUERY: Final = 0x03
COM_BINLOG_DUMP: Final = 0x12
COM_REGISTER_SLAVE: Final = 0x15
COM_BINLOG_DUMP_GTID: Final = 0x1E

# COM_BINLOG_DUMP flags
BINLOG_DUMP_NON_BLOCK: Final = 1
BINLOG_SEND_ANNOTATE_ROWS_EVENT: Final = 2

# --- server status / packets ------------------------------------------------------------------------
SERVER_STATUS_AUTOCOMMIT: Final = 0x0002
MAX_PACKET_PAYLOAD: Final = 0xFFFFFF
FN_REFLEN: Final = 512

# --- error codes (MariaDB errmsg numbers) ---------------------------------------------------------
ER_CON_COUNT_ERROR: Final = 1040
ER_ACCESS_DENIED_ERROR: Final = 1045
ER_NO_DB_ERROR: Final = 1046
ER_UNKNOWN_COM_ERROR: Final = 1047
ER_BAD_DB_ERROR: Final = 1049
ER_PARSE_ERROR: Final = 1064
ER_UNKNOWN_ERROR: Final = 1105
ER_UNKNOWN_SYSTEM_VARIABLE: Final = 1193
ER_ERROR_WHEN_EXECUTING_COMMAND: Final = 1220
ER_WRONG_ARGUMENTS: Final = 1210
ER_NOT_SUPPORTED_YET: Final = 1235
ER_MASTER_FATAL_ERROR_READING_BINLOG: Final = 1236
ER_INCORRECT_GLOBAL_LOCAL_VAR: Final = 1238
ER_WRONG_VALUE_FOR_VAR: Final = 1231
ER_WRONG_TYPE_FOR_VAR: Final = 1232
ER_SP_DOES_NOT_EXIST: Final = 1305
ER_NO_BINARY_LOGGING: Final = 1381
ER_MALFORMED_PACKET: Final = 1835
ER_NET_PACKETS_OUT_OF_ORDER: Final = 1156  # "Got packets out of order" (a wrong sequence id)
ER_INSIDE_TRANSACTION_PREVENTS_SWITCH_SKIP_REPLICATION: Final = 1929
ER_INCORRECT_GTID_STATE: Final = 1941
ER_DUPLICATE_GTID_DOMAIN: Final = 1943
ER_GTID_POSITION_NOT_FOUND_IN_BINLOG: Final = 1945
ER_GTID_START_FROM_BINLOG_HOLE: Final = 1951
ER_GTID_POSITION_NOT_FOUND_IN_BINLOG2: Final = 1955
ER_SLAVE_SAME_ID: Final = 4052

SQLSTATE: Final[dict[int, bytes]] = {
    ER_ACCESS_DENIED_ERROR: b"28000",
    ER_NO_DB_ERROR: b"3D000",
    ER_UNKNOWN_COM_ERROR: b"08S01",
    ER_BAD_DB_ERROR: b"42000",
    ER_PARSE_ERROR: b"42000",
    ER_NOT_SUPPORTED_YET: b"42000",
    ER_SP_DOES_NOT_EXIST: b"42000",
    ER_WRONG_VALUE_FOR_VAR: b"42000",
    ER_WRONG_TYPE_FOR_VAR: b"42000",
    ER_MALFORMED_PACKET: b"HY000",
}

# --- event-body details (appended for protocol/events.py and protocol/describe.py) --------------------
GTID_HEADER_LEN: Final = 19  # minimum GTID body; shorter bodies are padded with zeros
HB_SUB_HEADER_LEN: Final = 8  # heartbeat u64 position sub-header (header log_pos == 0)

# GTID flags_extra (MariaDB Gtid_log_event; values checked against 10.11 binlogs)
FL_EXTRA_MULTI_ENGINE_E1: Final = 1
FL_START_ALTER_E1: Final = 2
FL_COMMIT_ALTER_E1: Final = 4
FL_ROLLBACK_ALTER_E1: Final = 8

# MySQL Q_UPDATED_DB_NAMES limits
MAX_DBS_IN_EVENT_MTS: Final = 16
OVER_MAX_DBS_IN_EVENT_MTS: Final = 254

# Query flags2 bits that SHOW BINLOG EVENTS prints as "set ...;" (observed in MariaDB 10.11 binlogs)
OPTION_AUTO_IS_NULL: Final = 1 << 14
OPTION_NO_CHECK_CONSTRAINT_CHECKS: Final = 1 << 15
OPTION_NO_FOREIGN_KEY_CHECKS: Final = 1 << 26
OPTION_RELAXED_UNIQUE_CHECKS: Final = 1 << 27
OPTION_IF_EXISTS: Final = 1 << 28

# rows-event flags (Rows_log_event::enum_flag)
STMT_END_F: Final = 1
NO_FOREIGN_KEY_CHECKS_F: Final = 1 << 1
RELAXED_UNIQUE_CHECKS_F: Final = 1 << 2
COMPLETE_ROWS_F: Final = 1 << 3

# USER_VAR value types (Item_result) and flags
STRING_RESULT: Final = 0
REAL_RESULT: Final = 1
INT_RESULT: Final = 2
ROW_RESULT: Final = 3
DECIMAL_RESULT: Final = 4
USER_VAR_UNSIGNED_F: Final = 1

# INCIDENT numbers
INCIDENT_NONE: Final = 0
INCIDENT_LOST_EVENTS: Final = 1

# --- error codes used by the SQL surface (server/sql_surface.py); texts checked with MariaDB 10.11.19 perror --
ER_DBACCESS_DENIED_ERROR: Final = 1044
ER_BAD_FIELD_ERROR: Final = 1054
ER_EMPTY_QUERY: Final = 1065
ER_NO_TABLES_USED: Final = 1096
ER_UNKNOWN_TABLE: Final = 1109
ER_UNKNOWN_CHARACTER_SET: Final = 1115
ER_NO_SUCH_TABLE: Final = 1146
ER_BAD_TABLE_ERROR: Final = 1051
ER_TOO_MANY_ROWS: Final = 1172
ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT: Final = 1222
ER_LOCAL_VARIABLE: Final = 1228
ER_GLOBAL_VARIABLE: Final = 1229
ER_OPERAND_COLUMNS: Final = 1241
ER_SUBQUERY_NO_1_ROW: Final = 1242
ER_COLLATION_CHARSET_MISMATCH: Final = 1253
ER_VARIABLE_IS_NOT_STRUCT: Final = 1272
ER_UNKNOWN_COLLATION: Final = 1273
ER_TRUNCATED_WRONG_VALUE: Final = 1292
ER_UNKNOWN_TIME_ZONE: Final = 1298
ER_SP_FETCH_NO_DATA: Final = 1329
ER_DIVISION_BY_ZERO: Final = 1365
ER_ILLEGAL_VALUE_FOR_TYPE: Final = 1367
ER_TOO_BIG_PRECISION: Final = 1426
ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT: Final = 1582
ER_VARIABLE_IS_READONLY: Final = 1621
ER_DATA_OUT_OF_RANGE: Final = 1690
