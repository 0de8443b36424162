"""The texts a dump ends with, as MariaDB 10.11 words them (sql_repl.cc, log_event.cc): one home for them.

Almost all are sent with code 1236 (ER_MASTER_FATAL_ERROR_READING_BINLOG), which a replica's IO thread takes as
fatal (no retry). Texts of errors met while reading the binlog get MariaDB's coordinates suffix
(`with_coordinates`); where the "last byte read" of it stands is protocol/io_cache.py's business. The tests compare
each of them with what a real primary sent (tests/test_oracle.py, tests/test_oracle_multidomain.py,
tests/test_gtid_connect.py).
"""

from __future__ import annotations

# the start (init_binlog_sender, check_start_offset, gtid_find_binlog_file); no coordinates except where noted
BINLOG_NOT_OPEN = "Binary log is not open"
FIRST_LOG_NOT_FOUND = "Could not find first log file name in binary log index file"
IMPOSSIBLE_POSITION = "Client requested master to start replication from impossible position"  # with coordinates
GTID_STATE_NOT_FOUND = ("Could not find GTID state requested by slave in any binlog files. "
                        "Probably the slave state is too old and required binlog files have been purged.")
# between files and at a file's start (send_format_descriptor_event)
NEXT_LOG_NOT_FOUND = "could not find next log"
NO_FORMAT_DESCRIPTION = "Failed to find format descriptor event in start of binlog"
CORRUPT_FORMAT_DESCRIPTION = "Corrupt Format_description event found or out-of-memory"
CHECKSUM_NOT_HANDLED = "Slave can not handle replication events with the checksum that master is configured to log"
DECRYPT_FAILED = "Could not decrypt binlog: encryption key error"
# Log_event::read_log_event failures (set_read_error)
READ_BOGUS = "bogus data in log event"
READ_TOO_LARGE = "log event entry exceeded max_allowed_packet; Increase max_allowed_packet on master"
READ_TRUNCATED = "binlog truncated in the middle of event; consider out of disk space on master"
READ_CHECKSUM_FAILURE = "event read from binlog did not pass crc check"  # server/transcode.py, when stripping
# send_event_to_slave (10.11.19 spells "corrupt"; older sources and the spec had "currupt")
CORRUPT_GTID = "Failed to read Gtid_log_event: corrupt binlog"
CORRUPT_GTID_LIST = "Failed to read Gtid_list_log_event: corrupt binlog"
GTID_TO_BEGIN_FAILED = "Failed to replace GTID event with backwards-compatible event: corrupt event."
ANNOTATE_DUMMY_FAILED = "Failed to replace annotate_rows event with dummy: too small event."
CHECKPOINT_DUMMY_FAILED = "Failed to replace binlog checkpoint or gtid list event with dummy: too small event."
# binlogd's own refusals (no MariaDB counterpart), sent as 1236 without coordinates
NO_TRANSCODE_SEMI_SYNC = ("binlogd does not transcode checksums for a semi-sync replica: set @master_binlog_checksum "
                          "to the binlog's algorithm, or do not set @rpl_semi_sync_slave")
NO_TRANSCODE_REWRITE_DB = ("binlogd does not transcode checksums for a replica with replicate-rewrite-db (renamed "
                           "events change length): set @master_binlog_checksum to the binlog's algorithm")


def internal_error(e: BaseException) -> str:
    """The 1236 text of a dump that failed with a bug (its traceback is in the server log)."""
    return f"binlogd internal error ({type(e).__name__}: {e}); see the server log"


def open_failed(reason: str) -> str:
    return f"Could not open log file: {reason}"


def gtid_not_in_binlog(gtid: object) -> str:
    """ER_GTID_POSITION_NOT_FOUND_IN_BINLOG, sent as 1236."""
    return f"Error: connecting slave requested to start from GTID {gtid}, which is not in the master's binlog"


def gtid_diverged(gtid: object) -> str:
    """ER_GTID_POSITION_NOT_FOUND_IN_BINLOG2, sent as 1236."""
    return (f"Error: connecting slave requested to start from GTID {gtid}, which is not in the master's binlog. "
            "Since the master's binlog contains GTIDs with higher sequence numbers, it probably means that the "
            "slave has diverged due to executing extra erroneous transactions")


def gtid_start_in_hole(gtid: object) -> str:
    """ER_GTID_START_FROM_BINLOG_HOLE, sent as 1236."""
    return (f"The binlog on the master is missing the GTID {gtid} requested by the slave (even though both a prior "
            "and a subsequent sequence number does exist), and GTID strict mode is enabled")


def with_coordinates(message: str, start_file: str, start_pos: int, file: str, last_event: int,
                     last_byte: int) -> str:
    """mysql_binlog_send's suffix for errors met while reading (file names are base names)."""
    return (f"{message}; the first event '{start_file}' at {start_pos}, the last event read from '{file}' at "
            f"{last_event}, the last byte read from '{file}' at {last_byte}.")
