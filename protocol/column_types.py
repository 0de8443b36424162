"""MySQL/MariaDB column type codes (include/mysql_com.h enum_field_types) as TABLE_MAP events carry them.

One home for the codes: the row encoder (binlog builder), the applier's row decoder and `binlogd show`'s row text all
read TABLE_MAP type bytes. MariaDB's compressed columns come first as 140 (BLOB/TEXT COMPRESSED, one metadata byte)
and then 141 (VARCHAR/VARBINARY COMPRESSED, two), as a real 10.11 writes them.
"""

from __future__ import annotations

from typing import Final

T_DECIMAL: Final = 0
T_TINY: Final = 1
T_SHORT: Final = 2
T_LONG: Final = 3
T_FLOAT: Final = 4
T_DOUBLE: Final = 5
T_NULL: Final = 6
T_TIMESTAMP: Final = 7
T_LONGLONG: Final = 8
T_INT24: Final = 9
T_DATE: Final = 10
T_TIME: Final = 11
T_DATETIME: Final = 12
T_YEAR: Final = 13
T_NEWDATE: Final = 14
T_VARCHAR: Final = 15
T_BIT: Final = 16
T_TIMESTAMP2: Final = 17
T_DATETIME2: Final = 18
T_TIME2: Final = 19
T_BLOB_COMPRESSED: Final = 140
T_VARCHAR_COMPRESSED: Final = 141
T_JSON: Final = 245
T_NEWDECIMAL: Final = 246
T_ENUM: Final = 247
T_SET: Final = 248
T_TINY_BLOB: Final = 249
T_MEDIUM_BLOB: Final = 250
T_LONG_BLOB: Final = 251
T_BLOB: Final = 252
T_VAR_STRING: Final = 253
T_STRING: Final = 254
T_GEOMETRY: Final = 255
