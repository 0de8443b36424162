"""The expression evaluator: operators, comparisons, casts, function dispatch, for one statement."""

from __future__ import annotations

import datetime as dt
import math
import time
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import TYPE_CHECKING, Any

from binlogd.protocol import constants as C

from .. import sysvars as SV
from ..replica_filters import check_session_var
from .errors import SqlError, not_supported
from .functions import _FUNCTIONS, _KNOWN_FUNCTIONS, _arity
from .lexer import _Hex
from .like import like_match
from .nodes import _Assign, _Case, _Col, _Func, _Lit, _Node, _Op, _Row, _Subq, _SVar, _UVar
from .parser import _CMP_OPS
from .values import _DBL_MAX, _I64_MAX, _I64_MIN, _NUM_PREFIX, _U64, _out, _to_text

if TYPE_CHECKING:
    from .statement import _Stmt


class _Eval:
    """Evaluates expressions for one statement (NOW() is fixed for the statement, like in MariaDB)."""

    def __init__(self, stmt: _Stmt) -> None:
        self.stmt = stmt
        self.session = stmt.session
        self.server = stmt.server
        self.row: dict[str, Any] | None = None  # column values for SHOW ... WHERE / information_schema
        self.clause = "SELECT"
        self._now: float | None = None

    # --- helpers
    def warn(self, code: int, message: str) -> None:
        self.stmt.warnings.append(("Warning", code, message))

    def now(self) -> float:
        if self._now is None:
            ts = self.session.session_sysvars.get("timestamp")
            if isinstance(ts, int | float) and ts:
                self._now = float(ts)
            else:
                clock = getattr(self.server, "now", None)
                self._now = float(clock()) if callable(clock) else time.time()
        return self._now

    def tz_offset(self, epoch: float) -> int:
        tz = self.stmt.sysvar_session("time_zone")
        parsed = SV.parse_time_zone(str(tz)) if tz is not None else None
        if parsed is None or parsed[1] is None:
            try:
                off = dt.datetime.fromtimestamp(epoch).astimezone().utcoffset()
            except (OverflowError, OSError, ValueError):
                return 0
            return int(off.total_seconds()) if off is not None else 0
        return parsed[1]

    def number(self, v: Any, kind: str = "DOUBLE") -> int | Decimal | float | None:
        """Numeric value of v; strings become doubles (with MariaDB's truncation warning)."""
        if v is None or isinstance(v, int | float | Decimal):
            return v
        if isinstance(v, _Hex):
            return int.from_bytes(v, "big") if v else 0
        s = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
        m = _NUM_PREFIX.match(s)
        if m is None or s[m.end():].strip():
            shown = s if len(s) <= 128 else s[:125] + "..."
            self.warn(C.ER_TRUNCATED_WRONG_VALUE, f"Truncated incorrect {kind} value: '{shown}'")
        if m is None:
            return 0.0 if kind == "DOUBLE" else Decimal(0)
        if kind == "DECIMAL":
            with localcontext() as ctx:
                ctx.prec = 80
                return Decimal(m.group(0).strip())
        f = float(m.group(0))
        if math.isinf(f):
            return math.copysign(_DBL_MAX, f)
        return f

    def truth(self, v: Any) -> bool | None:
        n = self.number(v)
        return None if n is None else n != 0

    def integer(self, v: Any) -> int | None:
        n = self.number(v)
        if n is None:
            return None
        if isinstance(n, int):
            return n
        if isinstance(n, float) and not math.isfinite(n):
            return 0
        if abs(n) >= _U64:
            return _U64 if n > 0 else _I64_MIN
        with localcontext() as ctx:
            ctx.prec = 100
            return int(Decimal(n).quantize(Decimal(1), rounding=ROUND_HALF_UP))

    # --- dispatch
    def ev(self, node: _Node) -> Any:
        if isinstance(node, _Lit):
            return node.value
        if isinstance(node, _UVar):
            return self.session.user_vars.get(node.name)
        if isinstance(node, _SVar):
            return self.stmt.read_sysvar(node.scope, node.name, node.component)
        if isinstance(node, _Op):
            return self.op(node)
        if isinstance(node, _Func):
            return self.func(node)
        if isinstance(node, _Col):
            return self.column(node)
        if isinstance(node, _Assign):
            v = self.ev(node.expr)
            check_session_var(node.name, _out(v))
            self.session.user_vars[node.name] = _out(v)
            return v
        if isinstance(node, _Case):
            return self.case(node)
        if isinstance(node, _Subq):
            res = self.stmt.run_select(node.select, nested=True)
            if len(res.columns) != 1:
                raise SqlError(C.ER_OPERAND_COLUMNS, "Operand should contain 1 column(s)")
            if len(res.rows) > 1:
                raise SqlError(C.ER_SUBQUERY_NO_1_ROW, "Subquery returns more than 1 row")
            return res.rows[0][0] if res.rows else None
        if isinstance(node, _Row):
            raise SqlError(C.ER_OPERAND_COLUMNS, "Operand should contain 1 column(s)")
        raise AssertionError(node)  # pragma: no cover

    def column(self, node: _Col) -> Any:
        if self.row is not None and node.name.lower() in self.row:
            return self.row[node.name.lower()]
        if node.qual is not None and self.row is None:
            raise SqlError(C.ER_UNKNOWN_TABLE, f"Unknown table '{node.qual}' in {self.clause}")
        raise SqlError(C.ER_BAD_FIELD_ERROR, f"Unknown column '{node.name}' in '{self.clause}'")

    def case(self, node: _Case) -> Any:
        base = self.ev(node.base) if node.base is not None else None
        for cond, value in node.whens:
            if node.base is None:
                if self.truth(self.ev(cond)):
                    return self.ev(value)
            elif self.compare(base, self.ev(cond)) == 0:
                return self.ev(value)
        return self.ev(node.default) if node.default is not None else None

    # --- operators
    def op(self, node: _Op) -> Any:
        o = node.op
        if o in ("()", "COLLATE"):
            return self.ev(node.left)
        if o in ("AND", "OR", "XOR"):
            return self.logic(o, node)
        a = self.ev(node.left)
        if o == "NOT":
            t = self.truth(a)
            return None if t is None else int(not t)
        if o == "NEG":
            return self.negate(a, node)
        if o == "+u":
            return a
        if o == "~":
            n = self.integer(a)
            return None if n is None else (~n) & _U64
        if o == "IS":
            return self.is_test(a, node)
        if o == "IN":
            return self.in_list(a, node)
        if o == "BETWEEN":
            lo, hi = self.ev(node.right), self.ev(node.extra)  # type: ignore[arg-type]
            c1, c2 = self.compare(a, lo), self.compare(a, hi)
            if c1 is None or c2 is None:
                return None
            return int((c1 >= 0 and c2 <= 0) != node.neg)
        if o == "LIKE":
            return self.like(a, node)
        b = self.ev(node.right)  # type: ignore[arg-type]
        if o in _CMP_OPS:
            if o == "<=>":
                if a is None or b is None:
                    return int(a is None and b is None)
                return int(self.compare(a, b) == 0)
            c = self.compare(a, b)
            if c is None:
                return None
            return int({"=": c == 0, "<>": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[o])
        if o in ("|", "&", "^", "<<", ">>"):
            x, y = self.integer(a), self.integer(b)
            if x is None or y is None:
                return None
            x &= _U64
            if o == "|":
                return x | (y & _U64)
            if o == "&":
                return x & (y & _U64)
            if o == "^":
                return x ^ (y & _U64)
            y &= _U64
            if y >= 64:
                return 0
            return ((x << y) & _U64) if o == "<<" else x >> y
        return self.arith(o, a, b, node)

    def logic(self, o: str, node: _Op) -> Any:
        a = self.truth(self.ev(node.left))
        if o == "AND" and a is False:
            return 0
        if o == "OR" and a is True:
            return 1
        b = self.truth(self.ev(node.right))  # type: ignore[arg-type]
        if o == "AND":
            return 0 if b is False else (None if a is None or b is None else 1)
        if o == "OR":
            return 1 if b is True else (None if a is None or b is None else 0)
        return None if a is None or b is None else int(a != b)

    def is_test(self, a: Any, node: _Op) -> int:
        what = node.extra
        if what in ("NULL", "UNKNOWN"):
            r = a is None
        else:
            t = self.truth(a)
            r = t is not None and t == (what == "TRUE")
        return int(r != node.neg)

    def in_list(self, a: Any, node: _Op) -> Any:
        if a is None:
            return None
        saw_null = False
        for item in node.extra:
            c = self.compare(a, self.ev(item))
            if c is None:
                saw_null = True
            elif c == 0:
                return int(not node.neg)
        return None if saw_null else int(node.neg)

    def like(self, a: Any, node: _Op) -> Any:
        pat = self.ev(node.right)  # type: ignore[arg-type]
        esc_v = self.ev(node.extra) if node.extra is not None else "\\"
        if a is None or pat is None:
            return None
        esc = _to_text(esc_v)[:1] if esc_v is not None else "\\"
        return int(like_match(_to_text(a), _to_text(pat), esc or "\\") != node.neg)

    def compare(self, a: Any, b: Any) -> int | None:
        """-1/0/1 with MariaDB's rules: strings compare case-insensitively, a string against a number as a number."""
        if a is None or b is None:
            return None
        a_str = isinstance(a, str | bytes) and not isinstance(a, _Hex)
        b_str = isinstance(b, str | bytes) and not isinstance(b, _Hex)
        if a_str and b_str:
            if isinstance(a, bytes) or isinstance(b, bytes):
                x = a if isinstance(a, bytes) else a.encode()
                y = b if isinstance(b, bytes) else b.encode()
            else:
                x, y = a.casefold().rstrip(" "), b.casefold().rstrip(" ")
            return (x > y) - (x < y)
        x_n = self.number(a, "DECIMAL" if a_str and not isinstance(b, float) else "DOUBLE")
        y_n = self.number(b, "DECIMAL" if b_str and not isinstance(a, float) else "DOUBLE")
        assert x_n is not None and y_n is not None
        return (x_n > y_n) - (x_n < y_n)

    def negate(self, a: Any, node: _Op) -> Any:
        n = self.number(a)
        if n is None:
            return None
        if isinstance(n, int):
            r = -n
            if r < _I64_MIN:
                return Decimal(r)
            return r
        return -n

    def arith(self, o: str, a: Any, b: Any, node: _Op) -> Any:
        x, y = self.number(a), self.number(b)
        if x is None or y is None:
            return None
        if o in ("/", "DIV", "%") and y == 0:
            self.warn(C.ER_DIVISION_BY_ZERO, "Division by 0")
            return None
        if isinstance(x, float) or isinstance(y, float):
            fx, fy = float(x), float(y)
            if o == "DIV":
                return self.check_int(int(fx / fy), node, x, y)
            r = {"+": lambda: fx + fy, "-": lambda: fx - fy, "*": lambda: fx * fy, "/": lambda: fx / fy,
                 "%": lambda: math.fmod(fx, fy)}[o]()
            if math.isinf(r) or math.isnan(r):
                raise SqlError(C.ER_DATA_OUT_OF_RANGE, f"DOUBLE value is out of range in '{_expr_sql(self, node)}'")
            return r
        if isinstance(x, Decimal) or isinstance(y, Decimal) or o == "/":
            try:
                return self.decimal_arith(o, Decimal(x), Decimal(y), node)
            except InvalidOperation:
                raise SqlError(C.ER_DATA_OUT_OF_RANGE,
                               f"DECIMAL value is out of range in '{_expr_sql(self, node)}'") from None
        assert isinstance(x, int) and isinstance(y, int)
        if o == "+":
            r = x + y
        elif o == "-":
            r = x - y
        elif o == "*":
            r = x * y
        elif o == "DIV":
            r = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        else:  # %
            r = abs(x) % abs(y) * (1 if x >= 0 else -1)
        return self.check_int(r, node, x, y)

    def decimal_arith(self, o: str, dx: Decimal, dy: Decimal, node: _Op) -> Any:
        """Exact decimal arithmetic; '/' gets the dividend's scale + div_precision_increment (7/2 = 3.5000)."""
        with localcontext() as ctx:
            ctx.prec = 80
            if o == "+":
                return dx + dy
            if o == "-":
                return dx - dy
            if o == "*":
                return dx * dy
            if o == "%":
                r = dx.copy_abs() % dy.copy_abs()
                return -r if dx < 0 else r
            if o == "DIV":
                q = int((dx / dy).to_integral_value(rounding=ROUND_DOWN))
                return self.check_int(q, node, q, 0)
            incr = self.stmt.sysvar_session("div_precision_increment")
            scale = max(0, -int(dx.as_tuple().exponent)) + (incr if isinstance(incr, int) else 4)
            return (dx / dy).quantize(Decimal(1).scaleb(-min(scale, 38)), rounding=ROUND_HALF_UP)

    def check_int(self, r: int, node: _Op, x: Any, y: Any) -> int:
        unsigned = (isinstance(x, int) and x > _I64_MAX) or (isinstance(y, int) and y > _I64_MAX)
        if unsigned:
            if not 0 <= r <= _U64:
                raise SqlError(C.ER_DATA_OUT_OF_RANGE,
                               f"BIGINT UNSIGNED value is out of range in '{_expr_sql(self, node)}'")
        elif not _I64_MIN <= r <= _I64_MAX:
            raise SqlError(C.ER_DATA_OUT_OF_RANGE, f"BIGINT value is out of range in '{_expr_sql(self, node)}'")
        return r

    # --- functions
    def func(self, node: _Func) -> Any:
        name = node.name.upper()
        args = node.args
        if node.qual is not None:
            raise SqlError(C.ER_SP_DOES_NOT_EXIST, f"FUNCTION {node.qual}.{node.name} does not exist")
        impl = _FUNCTIONS.get(name)
        if impl is None:
            if name in _KNOWN_FUNCTIONS:
                raise not_supported(f"{name}()")
            db = self.session.database
            shown = f"{db}.{node.name}" if db else node.name
            raise SqlError(C.ER_SP_DOES_NOT_EXIST, f"FUNCTION {shown} does not exist")
        lo, hi, fn = impl
        _arity(node.name, args, lo, hi)
        return fn(self, node, args)


def _expr_sql(ev: _Eval, node: _Node) -> str:
    """MariaDB's printed form of an expression for 1690 messages ('9223372036854775807 + 1')."""
    sql = ev.stmt.sql
    if isinstance(node, _Op) and node.right is not None and node.op not in ("LIKE", "BETWEEN"):
        op = {"%": "%", "DIV": "DIV"}.get(node.op, node.op)
        return f"{_expr_sql(ev, node.left)} {op} {_expr_sql(ev, node.right)}"
    if isinstance(node, _Op) and node.op == "NEG":
        return f"-{_expr_sql(ev, node.left)}"
    return sql[node.start : node.end]
