"""SHOW BINLOG EVENTS Event_type and Info columns, as MariaDB 10.11 prints them for an event.

The Info text follows each event class's pack_info() in MariaDB sql/log_event_server.cc (10.8+ layout),
corrected where a real 10.11.19 server printed something else (the flags2 "set ...;" prefix of Query
events). tests/test_events.py pins the formats against events and SHOW BINLOG EVENTS output of a real
10.11 server; Incident, one-phase XA_prepare and Execute_load_query follow the source alone.
Events MariaDB itself would refuse to read (types beyond the FDE table, unknown non-ignorable types,
structurally invalid bodies) raise EventDecodeError, which SHOW BINLOG EVENTS reports as an error.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from typing import Final

from binlogd.protocol.constants import (
    ANONYMOUS_GTID_LOG_EVENT,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_CHECKSUM_ALG_OFF,
    BINLOG_CHECKSUM_ALG_UNDEF,
    CRC_LEN,
    CREATE_FILE_EVENT,
    DECIMAL_RESULT,
    EVENT_TYPE_NAMES,
    FL_COMMIT_ALTER_E1,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FL_STANDALONE,
    FL_START_ALTER_E1,
    FORMAT_DESCRIPTION_EVENT,
    HEADER_LEN,
    IGNORABLE_LOG_EVENT,
    INCIDENT_LOST_EVENTS,
    INT_RESULT,
    INTVAR_INSERT_ID,
    INTVAR_LAST_INSERT_ID,
    LOAD_EVENT,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_SUPPRESS_USE_F,
    LOG_EVENT_TYPES,
    MYSQL_GTID_LOG_EVENT,
    NEW_LOAD_EVENT,
    OPTION_AUTO_IS_NULL,
    OPTION_IF_EXISTS,
    OPTION_NO_CHECK_CONSTRAINT_CHECKS,
    OPTION_NO_FOREIGN_KEY_CHECKS,
    OPTION_RELAXED_UNIQUE_CHECKS,
    PRE_GA_DELETE_ROWS_EVENT,
    PRE_GA_UPDATE_ROWS_EVENT,
    PRE_GA_WRITE_ROWS_EVENT,
    PREVIOUS_GTIDS_LOG_EVENT,
    Q_FLAGS2_CODE,
    REAL_RESULT,
    STMT_END_F,
    STOP_EVENT,
    STRING_RESULT,
    TRANSACTION_CONTEXT_EVENT,
    USER_VAR_UNSIGNED_F,
    VIEW_CHANGE_EVENT,
)
from binlogd.protocol.events import (
    AnnotateRowsBody,
    AppendBlockBody,
    BinlogCheckpointBody,
    EventDecodeError,
    EventHeader,
    FileIdBody,
    FormatDescriptionBody,
    GtidBody,
    GtidListBody,
    HeartbeatBody,
    IncidentBody,
    IntvarBody,
    QueryBody,
    RandBody,
    RotateBody,
    RowsBody,
    StartEncryptionBody,
    StartV3Body,
    TableMapBody,
    UnknownBody,
    UserVarBody,
    XaId,
    XaPrepareBody,
    XidBody,
    parse_event,
    parse_header,
)
from binlogd.protocol.tables_info import TABLES_INFO_EVENT, TABLES_INFO_NAME, format_tables, parse_tables_info

# MySQL types MariaDB's reader turns into Ignorable_log_event even without the IGNORABLE flag.
_MYSQL_IGNORED: Final = frozenset(
    {MYSQL_GTID_LOG_EVENT, ANONYMOUS_GTID_LOG_EVENT, PREVIOUS_GTIDS_LOG_EVENT, TRANSACTION_CONTEXT_EVENT,
     VIEW_CHANGE_EVENT}
)
# Types MariaDB reads but which carry no pack_info (empty Info), or whose LOAD DATA text this module
# does not rebuild (obsolete pre-5.0 LOAD events and pre-GA rows events; printed with empty Info).
_EMPTY_INFO_TYPES: Final = frozenset(
    {STOP_EVENT, LOAD_EVENT, NEW_LOAD_EVENT, CREATE_FILE_EVENT, PRE_GA_WRITE_ROWS_EVENT,
     PRE_GA_UPDATE_ROWS_EVENT, PRE_GA_DELETE_ROWS_EVENT}
)
_C_BUF: Final = 255  # my_snprintf(buf[256], ...) in several pack_info()s
_FN_REFLEN_1: Final = 511  # Rotate_log_event keeps at most FN_REFLEN-1 bytes of the name


def event_type_name(type_code: int) -> str:
    """Log_event::get_type_str(): the Event_type column."""
    return EVENT_TYPE_NAMES.get(type_code, "Unknown")


# --- collations (MariaDB 10.11 information_schema) ------------------------------------------------------

# "charset id:suffix ..." -> collation charset_suffix ("=name" is a full name). ids < 2048.
_COLLATION_TABLE: Final = """
big5 1:chinese_ci 84:bin 1025:chinese_nopad_ci 1108:nopad_bin
latin2 2:czech_cs 9:general_ci 21:hungarian_ci 27:croatian_ci 77:bin 1033:general_nopad_ci
  1101:nopad_bin
dec8 3:swedish_ci 69:bin 1027:swedish_nopad_ci 1093:nopad_bin
cp850 4:general_ci 80:bin 1028:general_nopad_ci 1104:nopad_bin
latin1 5:german1_ci 8:swedish_ci 15:danish_ci 31:german2_ci 47:bin 48:general_ci 49:general_cs
  94:spanish_ci 1032:swedish_nopad_ci 1071:nopad_bin
hp8 6:english_ci 72:bin 1030:english_nopad_ci 1096:nopad_bin
koi8r 7:general_ci 74:bin 1031:general_nopad_ci 1098:nopad_bin
swe7 10:swedish_ci 82:bin 1034:swedish_nopad_ci 1106:nopad_bin
ascii 11:general_ci 65:bin 1035:general_nopad_ci 1089:nopad_bin
ujis 12:japanese_ci 91:bin 1036:japanese_nopad_ci 1115:nopad_bin
sjis 13:japanese_ci 88:bin 1037:japanese_nopad_ci 1112:nopad_bin
cp1251 14:bulgarian_ci 23:ukrainian_ci 50:bin 51:general_ci 52:general_cs 1074:nopad_bin
  1075:general_nopad_ci
hebrew 16:general_ci 71:bin 1040:general_nopad_ci 1095:nopad_bin
tis620 18:thai_ci 89:bin 1042:thai_nopad_ci 1113:nopad_bin
euckr 19:korean_ci 85:bin 1043:korean_nopad_ci 1109:nopad_bin
latin7 20:estonian_cs 41:general_ci 42:general_cs 79:bin 1065:general_nopad_ci 1103:nopad_bin
koi8u 22:general_ci 75:bin 1046:general_nopad_ci 1099:nopad_bin
gb2312 24:chinese_ci 86:bin 1048:chinese_nopad_ci 1110:nopad_bin
greek 25:general_ci 70:bin 1049:general_nopad_ci 1094:nopad_bin
cp1250 26:general_ci 34:czech_cs 44:croatian_ci 66:bin 99:polish_ci 1050:general_nopad_ci
  1090:nopad_bin
gbk 28:chinese_ci 87:bin 1052:chinese_nopad_ci 1111:nopad_bin
cp1257 29:lithuanian_ci 58:bin 59:general_ci 1082:nopad_bin 1083:general_nopad_ci
latin5 30:turkish_ci 78:bin 1054:turkish_nopad_ci 1102:nopad_bin
armscii8 32:general_ci 64:bin 1056:general_nopad_ci 1088:nopad_bin
utf8mb3 33:general_ci 83:bin 192:unicode_ci 193:icelandic_ci 194:latvian_ci 195:romanian_ci
  196:slovenian_ci 197:polish_ci 198:estonian_ci 199:spanish_ci 200:swedish_ci 201:turkish_ci
  202:czech_ci 203:danish_ci 204:lithuanian_ci 205:slovak_ci 206:spanish2_ci 207:roman_ci
  208:persian_ci 209:esperanto_ci 210:hungarian_ci 211:sinhala_ci 212:german2_ci
  213:croatian_mysql561_ci 214:unicode_520_ci 215:vietnamese_ci 223:general_mysql500_ci
  576:croatian_ci 577:myanmar_ci 578:thai_520_w2 1057:general_nopad_ci 1107:nopad_bin
  1216:unicode_nopad_ci 1238:unicode_520_nopad_ci
ucs2 35:general_ci 90:bin 128:unicode_ci 129:icelandic_ci 130:latvian_ci 131:romanian_ci
  132:slovenian_ci 133:polish_ci 134:estonian_ci 135:spanish_ci 136:swedish_ci 137:turkish_ci
  138:czech_ci 139:danish_ci 140:lithuanian_ci 141:slovak_ci 142:spanish2_ci 143:roman_ci
  144:persian_ci 145:esperanto_ci 146:hungarian_ci 147:sinhala_ci 148:german2_ci
  149:croatian_mysql561_ci 150:unicode_520_ci 151:vietnamese_ci 159:general_mysql500_ci
  640:croatian_ci 641:myanmar_ci 642:thai_520_w2 1059:general_nopad_ci 1114:nopad_bin
  1152:unicode_nopad_ci 1174:unicode_520_nopad_ci
cp866 36:general_ci 68:bin 1060:general_nopad_ci 1092:nopad_bin
keybcs2 37:general_ci 73:bin 1061:general_nopad_ci 1097:nopad_bin
macce 38:general_ci 43:bin 1062:general_nopad_ci 1067:nopad_bin
macroman 39:general_ci 53:bin 1063:general_nopad_ci 1077:nopad_bin
cp852 40:general_ci 81:bin 1064:general_nopad_ci 1105:nopad_bin
utf8mb4 45:general_ci 46:bin 224:unicode_ci 225:icelandic_ci 226:latvian_ci 227:romanian_ci
  228:slovenian_ci 229:polish_ci 230:estonian_ci 231:spanish_ci 232:swedish_ci 233:turkish_ci
  234:czech_ci 235:danish_ci 236:lithuanian_ci 237:slovak_ci 238:spanish2_ci 239:roman_ci
  240:persian_ci 241:esperanto_ci 242:hungarian_ci 243:sinhala_ci 244:german2_ci
  245:croatian_mysql561_ci 246:unicode_520_ci 247:vietnamese_ci 608:croatian_ci 609:myanmar_ci
  610:thai_520_w2 1069:general_nopad_ci 1070:nopad_bin 1248:unicode_nopad_ci
  1270:unicode_520_nopad_ci
utf16 54:general_ci 55:bin 101:unicode_ci 102:icelandic_ci 103:latvian_ci 104:romanian_ci
  105:slovenian_ci 106:polish_ci 107:estonian_ci 108:spanish_ci 109:swedish_ci 110:turkish_ci
  111:czech_ci 112:danish_ci 113:lithuanian_ci 114:slovak_ci 115:spanish2_ci 116:roman_ci
  117:persian_ci 118:esperanto_ci 119:hungarian_ci 120:sinhala_ci 121:german2_ci
  122:croatian_mysql561_ci 123:unicode_520_ci 124:vietnamese_ci 672:croatian_ci 673:myanmar_ci
  674:thai_520_w2 1078:general_nopad_ci 1079:nopad_bin 1125:unicode_nopad_ci
  1147:unicode_520_nopad_ci
utf16le 56:general_ci 62:bin 1080:general_nopad_ci 1086:nopad_bin
cp1256 57:general_ci 67:bin 1081:general_nopad_ci 1091:nopad_bin
utf32 60:general_ci 61:bin 160:unicode_ci 161:icelandic_ci 162:latvian_ci 163:romanian_ci
  164:slovenian_ci 165:polish_ci 166:estonian_ci 167:spanish_ci 168:swedish_ci 169:turkish_ci
  170:czech_ci 171:danish_ci 172:lithuanian_ci 173:slovak_ci 174:spanish2_ci 175:roman_ci
  176:persian_ci 177:esperanto_ci 178:hungarian_ci 179:sinhala_ci 180:german2_ci
  181:croatian_mysql561_ci 182:unicode_520_ci 183:vietnamese_ci 736:croatian_ci 737:myanmar_ci
  738:thai_520_w2 1084:general_nopad_ci 1085:nopad_bin 1184:unicode_nopad_ci
  1206:unicode_520_nopad_ci
binary 63:=binary
geostd8 92:general_ci 93:bin 1116:general_nopad_ci 1117:nopad_bin
cp932 95:japanese_ci 96:bin 1119:japanese_nopad_ci 1120:nopad_bin
eucjpms 97:japanese_ci 98:bin 1121:japanese_nopad_ci 1122:nopad_bin
"""
_UCA1400_CHARSETS: Final = ("utf8mb3", "utf8mb4", "ucs2", "utf16", "utf32")
_UCA1400_TAILORINGS: Final = (
    "", "icelandic", "latvian", "romanian", "slovenian", "polish", "estonian", "spanish", "swedish",
    "turkish", "czech", "danish", "lithuanian", "slovak", "spanish2", "roman", "persian", "esperanto",
    "hungarian", "sinhala", "german2", None, None, "vietnamese", "croatian",
)
_UCA1400_VARIANTS: Final = (
    "ai_ci", "ai_cs", "as_ci", "as_cs", "nopad_ai_ci", "nopad_ai_cs", "nopad_as_ci", "nopad_as_cs",
)


def _load_collations() -> dict[int, tuple[str, str]]:
    table: dict[int, tuple[str, str]] = {}
    charset = ""
    for word in _COLLATION_TABLE.split():
        if ":" not in word:
            charset = word
            continue
        num, suffix = word.split(":", 1)
        table[int(num)] = (charset, suffix[1:] if suffix.startswith("=") else f"{charset}_{suffix}")
    return table


_COLLATIONS: Final = _load_collations()


def collation_name(number: int) -> tuple[str, str] | None:
    """(character set, collation) of a MariaDB 10.11 collation id, or None when the server has none."""
    known = _COLLATIONS.get(number)
    if known is not None:
        return known
    block, rest = divmod(number - 2048, 256)
    if number < 2048 or block >= len(_UCA1400_CHARSETS):
        return None
    tailoring_index, variant = divmod(rest, 8)
    if tailoring_index >= len(_UCA1400_TAILORINGS) or _UCA1400_TAILORINGS[tailoring_index] is None:
        return None
    charset = _UCA1400_CHARSETS[block]
    tailoring = _UCA1400_TAILORINGS[tailoring_index]
    return charset, f"{charset}_uca1400_{tailoring + '_' if tailoring else ''}{_UCA1400_VARIANTS[variant]}"


# --- value formatting -----------------------------------------------------------------------------------

_DBL_DIG: Final = 15
_GCVT_WIDTH: Final = _DBL_DIG + 4 + _DBL_DIG  # MY_GCVT_MAX_FIELD_WIDTH


def format_double(x: float) -> str:
    """my_gcvt(x, MY_GCVT_ARG_DOUBLE, MY_GCVT_MAX_FIELD_WIDTH): shortest digits, 'f' or 'e' form.

    dtoa mode 4 with 33+ digits returns the shortest round-trip digits, the same as Python's repr;
    at this width no digit is ever cut, so only the format choice of my_gcvt has to be reproduced.
    """
    if not math.isfinite(x):
        return "0"
    negative = math.copysign(1.0, x) < 0
    width = _GCVT_WIDTH - (1 if x < 0 else 0)
    _, digit_tuple, exponent = Decimal(repr(abs(x))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    decpt = len(digit_tuple) + int(exponent) if digits != "0" else 1
    n = len(digits)
    exp_len = 1 + (decpt >= 101 or decpt <= -99) + (decpt >= 11 or decpt <= -9)
    f_len = n - decpt + 2 if decpt <= 0 else (n + 1 if decpt < n else decpt)
    have_space = f_len <= width
    force_e = decpt <= 0 and width <= 2 - decpt and width >= 3 + exp_len
    use_f = (
        have_space
        or (decpt <= width and (decpt >= -1 or (decpt == -2 and (n > 1 or not force_e))) and not force_e)
    ) and (not have_space or (decpt >= -_DBL_DIG + 1 and (decpt <= _DBL_DIG or n > decpt)))
    out = "-" if negative else ""
    if use_f:
        if decpt <= 0:
            return out + "0." + "0" * -decpt + digits
        if decpt < n:
            return out + digits[:decpt] + "." + digits[decpt:]
        return out + digits + "0" * (decpt - n)
    e = decpt - 1
    mantissa = digits[0] + ("." + digits[1:] if n > 1 else "")
    return f"{out}{mantissa}e{'-' if e < 0 else ''}{abs(e)}"


_DIG2BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def format_decimal(precision: int, scale: int, data: bytes) -> str:
    """A DECIMAL in MySQL binary format (decimal2bin) printed like my_decimal::to_string()."""
    if not (1 <= precision <= 65 and 0 <= scale <= min(precision, 38)):
        raise EventDecodeError(f"User var: invalid DECIMAL({precision},{scale})")
    intg = precision - scale
    intg0, intg0x = divmod(intg, 9)
    frac0, frac0x = divmod(scale, 9)
    size = intg0 * 4 + _DIG2BYTES[intg0x] + frac0 * 4 + _DIG2BYTES[frac0x]
    if len(data) < size:
        raise EventDecodeError(f"User var: DECIMAL({precision},{scale}) needs {size} bytes, has {len(data)}")
    raw = bytearray(data[:size])
    negative = not raw[0] & 0x80
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(b ^ 0xFF for b in raw)
    pos = 0

    def group(ndigits: int) -> str:
        nonlocal pos
        nbytes = 4 if ndigits == 9 else _DIG2BYTES[ndigits]
        value = int.from_bytes(raw[pos : pos + nbytes], "big")
        pos += nbytes
        if value >= 10**ndigits:
            raise EventDecodeError("User var: corrupt DECIMAL digits")
        return str(value).zfill(ndigits)

    int_part = (group(intg0x) if intg0x else "") + "".join(group(9) for _ in range(intg0))
    frac_part = "".join(group(9) for _ in range(frac0)) + (group(frac0x) if frac0x else "")
    text = (int_part.lstrip("0") or "0") + ("." + frac_part if scale else "")
    return ("-" if negative else "") + text


def _quote(name: bytes) -> bytes:
    """append_identifier() with the default backtick quoting."""
    return b"`" + name.replace(b"`", b"``") + b"`"


def _cstr(data: bytes) -> bytes:
    end = data.find(b"\0")
    return data if end < 0 else data[:end]


def _serialize_xid(xa: XaId) -> bytes:
    """XID::serialize(): X'gtrid',X'bqual',formatID (lowercase hex)."""
    return b"X'%s',X'%s',%d" % (xa.gtrid.hex().encode(), xa.bqual.hex().encode(), xa.format_id)


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# --- per-event Info ---------------------------------------------------------------------------------------

_FLAGS2_SETS: Final = (
    (OPTION_NO_FOREIGN_KEY_CHECKS, b"foreign_key_checks=0"),
    (OPTION_AUTO_IS_NULL, b"sql_auto_is_null=1"),
    (OPTION_RELAXED_UNIQUE_CHECKS, b"unique_checks=0"),
    (OPTION_NO_CHECK_CONSTRAINT_CHECKS, b"check_constraint_checks=0"),
    (OPTION_IF_EXISTS, b"@@sql_if_exists=1"),
)


def _query_info(header: EventHeader, body: QueryBody) -> bytes:
    if body.load_query is not None:  # Execute_load_query_log_event::pack_info
        use = b"use " + _quote(body.db) + b"; " if body.db else b""
        return use + body.query + b" ;file_id=%d" % body.load_query.file_id
    out = b""
    if not header.flags & LOG_EVENT_SUPPRESS_USE_F and body.db:
        out += b"use " + _quote(body.db) + b"; "
    flags2 = body.status_vars.get(Q_FLAGS2_CODE, 0)
    sets = [text for bit, text in _FLAGS2_SETS if isinstance(flags2, int) and flags2 & bit]
    if sets:
        out += b"set " + b", ".join(sets) + b"; "
    return out + body.query


def _gtid_info(header: EventHeader, body: GtidBody) -> bytes:
    if body.flags2 & FL_STANDALONE:
        out = b"GTID "
    elif body.flags2 & FL_PREPARED_XA:
        out = b"XA START "
    else:
        out = b"BEGIN GTID "
    if body.flags2 & FL_PREPARED_XA and body.xa is not None:
        out += _serialize_xid(body.xa) + b" GTID "
    out += b"%d-%d-%d" % (body.domain_id, header.server_id, body.seq_no)
    if body.flags2 & FL_GROUP_COMMIT_ID:
        out += b" cid=%d" % (body.commit_id or 0)
    if body.flags_extra & FL_START_ALTER_E1:
        out += b" START ALTER"
    if body.flags_extra & FL_COMMIT_ALTER_E1:
        out += b" COMMIT ALTER id=%d" % (body.sa_seq_no or 0)
    if body.flags_extra & FL_ROLLBACK_ALTER_E1:
        out += b" ROLLBACK ALTER id=%d" % (body.sa_seq_no or 0)
    return out


def _gtid_list_info(body: GtidListBody) -> bytes:
    # Gtid_list_log_event::pack_info sorts with rpl_gtid's operator<: domain, then seq_no.
    ordered = sorted(body.gtids, key=lambda g: (g.domain_id, g.seq_no))
    return b"[" + b",".join(b"%d-%d-%d" % g for g in ordered) + b"]"


def _user_var_info(body: UserVarBody) -> bytes:
    name = b"@" + _quote(body.name) + b"="
    if body.is_null:
        return name + b"NULL"
    value = body.value
    if body.type == REAL_RESULT:
        if len(value) < 8:
            raise EventDecodeError("User var: REAL value shorter than 8 bytes")
        return name + format_double(struct.unpack("<d", value[:8])[0]).encode()
    if body.type == INT_RESULT:
        if len(value) < 8:
            raise EventDecodeError("User var: INT value shorter than 8 bytes")
        number = int.from_bytes(value[:8], "little")
        unsigned = body.flags is not None and body.flags & USER_VAR_UNSIGNED_F
        return name + str(number if unsigned else _signed64(number)).encode()
    if body.type == DECIMAL_RESULT:
        if len(value) < 2:
            raise EventDecodeError("User var: DECIMAL value shorter than 2 bytes")
        return name + format_decimal(value[0], value[1], value[2:]).encode()
    if body.type == STRING_RESULT:
        names = collation_name(body.charset or 0)
        if names is None:
            return b"???"
        hexed = b"X'%s'" % value.hex().upper().encode() if value else b'""'
        return name + b"_" + names[0].encode() + b" " + hexed + b" COLLATE " + names[1].encode()
    raise EventDecodeError(f"User var: unknown value type {body.type}")


def _incident_info(body: IncidentBody) -> bytes:
    if body.incident != INCIDENT_LOST_EVENTS:
        raise EventDecodeError(f"Incident: unknown incident number {body.incident}")
    # MariaDB prints the message only when it is empty (the branches of pack_info are swapped).
    if body.message:
        return b"#%d (LOST_EVENTS)" % body.incident
    return b"#%d (LOST_EVENTS): " % body.incident


def _xa_prepare_info(body: XaPrepareBody) -> bytes:
    if not 1 <= len(body.xid.gtrid) <= 64 or len(body.xid.bqual) > 64:
        raise EventDecodeError("XA_prepare: invalid xid lengths")
    if body.one_phase:
        return b"XA COMMIT " + _serialize_xid(body.xid) + b" ONE PHASE"
    return b"XA PREPARE " + _serialize_xid(body.xid)


def _info(header: EventHeader, body: object) -> bytes:
    match body:
        case FormatDescriptionBody() | StartV3Body():
            return b"Server ver: %s, Binlog ver: %d" % (body.server_version.encode("latin-1"), body.binlog_version)
        case QueryBody():
            return _query_info(header, body)
        case RotateBody():
            return body.next_file[:_FN_REFLEN_1] + b";pos=%d" % body.position
        case XidBody():
            return b"COMMIT /* xid=%d */" % body.xid
        case GtidBody():
            return _gtid_info(header, body)
        case GtidListBody():
            return _gtid_list_info(body)
        case BinlogCheckpointBody():
            return body.file_name
        case AnnotateRowsBody():
            return body.query
        case TableMapBody():
            return (b"table_id: %d (%s.%s)" % (body.table_id, _cstr(body.db), _cstr(body.table)))[:_C_BUF]
        case RowsBody():
            return b"table_id: %d%s" % (body.table_id, b" flags: STMT_END_F" if body.flags & STMT_END_F else b"")
        case UserVarBody():
            return _user_var_info(body)
        case IntvarBody():
            names = {INTVAR_LAST_INSERT_ID: b"LAST_INSERT_ID", INTVAR_INSERT_ID: b"INSERT_ID"}
            return names.get(body.type, b"UNKNOWN") + b"=%d" % _signed64(body.value)
        case RandBody():
            return b"rand_seed1=%d,rand_seed2=%d" % (body.seed1, body.seed2)
        case IncidentBody():
            return _incident_info(body)
        case AppendBlockBody():
            return b";file_id=%d;block_len=%d" % (body.file_id, len(body.block))
        case FileIdBody():
            return b";file_id=%d" % body.file_id
        case XaPrepareBody():
            return _xa_prepare_info(body)
        case StartEncryptionBody() | HeartbeatBody():
            return b""
        case UnknownBody() if body.type_code in _EMPTY_INFO_TYPES:
            return b""
    raise EventDecodeError(f"Found invalid event in binary log (type {header.type_code})")


def _tables_info_info(event: bytes | bytearray | memoryview, checksum_alg: int) -> bytes:
    """binlogd's own ignorable event: Info lists the tables like Table_map does, `db`.`t1`, `db`.`t2`."""
    end = len(event) - (CRC_LEN if checksum_alg == BINLOG_CHECKSUM_ALG_CRC32 else 0)
    return format_tables(parse_tables_info(bytes(event[HEADER_LEN:end]))).encode("utf-8")


def describe_raw(
    event: bytes | bytearray | memoryview, checksum_alg: int, *, number_of_event_types: int = LOG_EVENT_TYPES
) -> tuple[str, bytes]:
    """(Event_type, Info as the exact bytes MariaDB sends). See `describe`."""
    header = parse_header(event)
    if header.event_length != len(event):
        raise EventDecodeError(f"event_length field says {header.event_length}, event has {len(event)} bytes")
    code = header.type_code
    if code > number_of_event_types and code != FORMAT_DESCRIPTION_EVENT:
        raise EventDecodeError(f"event type {code} is beyond the {number_of_event_types} types of the FDE")
    if code == TABLES_INFO_EVENT and header.flags & LOG_EVENT_IGNORABLE_F:
        return TABLES_INFO_NAME, _tables_info_info(event, checksum_alg)
    if header.flags & LOG_EVENT_IGNORABLE_F or code in _MYSQL_IGNORED:
        known_algs = (BINLOG_CHECKSUM_ALG_OFF, BINLOG_CHECKSUM_ALG_CRC32, BINLOG_CHECKSUM_ALG_UNDEF)
        if code != FORMAT_DESCRIPTION_EVENT and checksum_alg not in known_algs:
            raise EventDecodeError(f"unknown binlog checksum algorithm {checksum_alg}")
        with_crc = checksum_alg == BINLOG_CHECKSUM_ALG_CRC32 or code == FORMAT_DESCRIPTION_EVENT
        if len(event) < HEADER_LEN + (CRC_LEN if with_crc else 0):
            raise EventDecodeError("event too short for its checksum")
        info = b"# Ignorable event type %d (%s)" % (code, event_type_name(code).encode())
        return event_type_name(IGNORABLE_LOG_EVENT), info[:_C_BUF]
    parsed = parse_event(event, checksum_alg)
    return event_type_name(code), _info(parsed.header, parsed.body)


def describe(
    event: bytes | bytearray | memoryview, checksum_alg: int, *, number_of_event_types: int = LOG_EVENT_TYPES
) -> tuple[str, str]:
    """(Event_type, Info) exactly as MariaDB 10.11's SHOW BINLOG EVENTS prints them for one whole event.

    `checksum_alg` is the file's FDE algorithm. Info is decoded as UTF-8 with surrogateescape, so
    `info.encode("utf-8", "surrogateescape")` gives back the bytes MariaDB would send (`describe_raw`).
    """
    name, info = describe_raw(event, checksum_alg, number_of_event_types=number_of_event_types)
    return name, info.decode("utf-8", "surrogateescape")
