"""binlogd's SQL surface: a pure, synchronous evaluator for the statements clients send around a dump.

Why a hand-written lexer/parser and not sqlglot: replicas depend on exact MariaDB answers (column names are
the statement's own text, `SET @master_binlog_checksum= @@global.binlog_checksum` must evaluate the system
variable, `SHOW BINARY LOG STATUS` must fail with 1064 so python-mysql-replication falls back...), and a
general-purpose transpiler normalises exactly the details that matter here. The grammar is the small
MariaDB subset binlogd serves; everything else is refused with MariaDB's own error where one fits (1064,
1046, 1146, 1193, 1305...) or 1235 "doesn't yet support", never with a silent OK.

Error texts and SQLSTATEs were checked against a MariaDB 10.11.19 server (`perror` and live statements);
see tests/test_sql_surface.py. `execute()` does no I/O: the server's state comes through `ServerView`.

Modules, by what they hold: errors (SqlError and its builders), session (SessionState, USE), server_view
(the ServerView protocol), results (ResultSet, Ok), lexer, nodes (the expression tree), parser, values
(MariaDB's text of doubles/decimals), functions, evaluator, like, base (one statement's state and system
variable reads), select, setvars, show, statement (dispatch, transactions, refusals, execute()).
"""

from .errors import SqlError, not_supported
from .lexer import leading_words
from .like import like_match
from .results import Ok, ResultSet
from .server_view import ServerView
from .session import SessionState, change_database
from .statement import execute
from .values import DecimalText

__all__ = ["DecimalText", "Ok", "ResultSet", "ServerView", "SessionState", "SqlError", "change_database", "execute",
           "leading_words", "like_match", "not_supported"]
