/* The audit ledger's JSON Lines parsed into Arrow buffers in C (optional: spark_analytics/ledger.py parses with
 * pyarrow.json when this module is not built, or when it refuses a file). Only the simple subset the ledger writer
 * emits is accepted, and accepted lines give exactly the values pyarrow.json.read_json gives with the explicit
 * schema (unexpected fields ignored); anything outside the subset is refused as a whole (None) and pyarrow decides.
 * The scan releases the GIL: the audit parses the ledger in a thread beside the binlog's decoding.
 *
 * scan(data, fields, max_line) -> (rows, columns) or None
 *   `data`: the file's bytes; `fields`: a sequence of (name, type) with type "string", "int64", "int32" or "bool"
 *   (the schema's fields in order); `max_line`: the longest line accepted (bytes, without its newline).
 *   `columns`: per field, in order, None when every row is null, else (nulls, validity, values) for an int or bool
 *   field, (nulls, validity, offsets, data) for a string field: `nulls` the null count, the others Buffer objects
 *   holding the Arrow buffers of the column (validity: bitmap LSB first, None when there is no null; values:
 *   int64/int32 in the machine's order or a bitmap; offsets: int32, rows + 1 of them; data: UTF-8).
 *
 * The subset (anything else: None):
 *   - every line one JSON object, the buffer ending with a newline: no blank line, no '\r', no second object;
 *     spaces and tabs between tokens (json.dumps' default separators) are accepted, nothing else as whitespace;
 *   - keys written plainly (printable ASCII, no escape), each field at most once per line; a key that is not a
 *     field is skipped as pyarrow ignores it (the writer's `filters_from`), but only with a null, bool, int64 or
 *     string value (never an object or an array);
 *   - null for any field; for a string field a string: escapes decoded, UTF-8 checked strictly (no overlong form,
 *     no surrogate, nothing above U+10FFFF), no raw control character, no lone surrogate escape; for an int field
 *     -?(0|[1-9][0-9]*) within the type's range ("-0" is 0, as in pyarrow); for a bool field true or false;
 *   - no line longer than `max_line`: pyarrow may refuse an object longer than its read block (ledger.py's blocks
 *     are at least 1 MiB; pyarrow 26 takes it); a ledger's lines are far shorter, such a file is left to pyarrow.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { T_STRING, T_INT64, T_INT32, T_BOOL };

/* A block of memory owned by a Python object that lends it through the buffer protocol: pyarrow.py_buffer wraps
 * it without a copy, and the memory lives as long as the Arrow buffer does. */
typedef struct {
    PyObject_HEAD
    void *p;
    Py_ssize_t len;
} Buffer;

static void buffer_dealloc(Buffer *self) {
    free(self->p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int buffer_get(Buffer *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p, self->len, 1, flags);
}

static PyBufferProcs buffer_procs = {(getbufferproc)buffer_get, NULL};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlogd.spark_analytics._ledgerscan.Buffer",
    .tp_basicsize = sizeof(Buffer),
    .tp_dealloc = (destructor)buffer_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "memory holding one Arrow buffer of a scanned column (buffer protocol, read-only)",
};

/* Takes `p` (malloc'd) over: freed with the object, or here when the object cannot be made. */
static PyObject *buffer_of(void *p, Py_ssize_t len) {
    Buffer *b = PyObject_New(Buffer, &BufferType);
    if (b == NULL) {
        free(p);
        return NULL;
    }
    b->p = p;
    b->len = len;
    return (PyObject *)b;
}

typedef struct {
    char *name;
    size_t len;
    int type;
    int next;          /* the field whose key followed this one's last time: tried first */
    Py_ssize_t seen;   /* the last row with this key (a key repeated in one object is refused) */
    Py_ssize_t count;  /* rows with a value (not null) */
    uint8_t *valid;    /* validity bitmap; this and the rest allocated at the column's first value */
    void *values;      /* int64/int32 values or the bool bitmap */
    int32_t *offsets;  /* string columns: rows + 1, set up to [filled] */
    Py_ssize_t filled;
    char *data;
    size_t data_len, data_cap;
} Column;

typedef struct {
    const unsigned char *p, *end;  /* the input; end[-1] is '\n', which stops every scan loop below */
    Py_ssize_t rows, max_line;
    Column *cols;
    int ncols;
    int *next;        /* next[ncols]: the guess for a line's first key, next[ncols + 1]: after an unknown key */
    int no_memory;
} Scan;

#define REFUSE 1
#define ERROR (-1) /* out of memory */

/* Bytes copied as they are inside a string: printable ASCII but '"' and '\\' (DEL included: pyarrow keeps it). */
static unsigned char plain[256];

static void tables(void) {
    for (int c = 0x20; c < 0x80; c++) plain[c] = c != '"' && c != '\\';
}

static inline const unsigned char *skip_ws(const unsigned char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

static int first_value(Scan *s, Column *c) {
    const Py_ssize_t rows = s->rows, bits = (rows + 7) / 8;
    c->valid = calloc((size_t)bits, 1);
    if (c->type == T_STRING) {
        c->offsets = calloc((size_t)rows + 1, sizeof(int32_t));
        c->data_cap = 4096;
        c->data = malloc(c->data_cap);
        if (c->valid == NULL || c->offsets == NULL || c->data == NULL) return ERROR;
    } else {
        const size_t size = c->type == T_INT64 ? (size_t)rows * 8 : c->type == T_INT32 ? (size_t)rows * 4 : (size_t)bits;
        c->values = calloc(size, 1); /* (rows >= 1: the buffer ends with a newline) */
        if (c->valid == NULL || c->values == NULL) return ERROR;
    }
    return 0;
}

/* Room for `n` more bytes of string data. */
static int reserve(Column *c, size_t n) {
    if (c->data_len + n <= c->data_cap) return 0;
    size_t cap = c->data_cap * 2;
    while (cap < c->data_len + n) cap *= 2;
    char *d = realloc(c->data, cap);
    if (d == NULL) return ERROR;
    c->data = d;
    c->data_cap = cap;
    return 0;
}

static inline int hex4(const unsigned char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        const unsigned char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a') + 10;
        else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A') + 10;
        else return REFUSE;
    }
    *out = v;
    return 0;
}

/* The length of the well-formed UTF-8 sequence at p (before `close`), or 0: Python's and RFC 3629's rules. */
static inline int utf8_len(const unsigned char *p, const unsigned char *close) {
    const unsigned char b = p[0];
    int n;
    unsigned char lo = 0x80, hi = 0xBF;  /* the second byte's range */
    if (b >= 0xC2 && b <= 0xDF) n = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0) lo = 0xA0;
        else if (b == 0xED) hi = 0x9F;  /* U+D800..U+DFFF: surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0) lo = 0x90;
        else if (b == 0xF4) hi = 0x8F;  /* not above U+10FFFF */
    } else return 0;
    if (close - p < n || p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return n;
}

/* The string whose opening quote was at p[-1], appended to `c`'s data (NULL: only checked). *pp: after its closing
 * quote. Escapes decode as JSON says; a surrogate escape must be a high one followed by a low one. */
static int string_value(Column *c, const unsigned char **pp) {
    const unsigned char *p = *pp, *q = p;
    while (plain[*q]) q++;
    if (*q == '"') { /* the common case: nothing to decode */
        if (c != NULL) {
            if (reserve(c, (size_t)(q - p))) return ERROR;
            memcpy(c->data + c->data_len, p, (size_t)(q - p));
            c->data_len += (size_t)(q - p);
        }
        *pp = q + 1;
        return 0;
    }
    /* the closing quote first (the decoded string is never longer than its text), then decode and check */
    const unsigned char *close = q;
    for (;;) {
        if (*close == '"') break;
        if (*close == '\\') {
            if (close[1] < 0x20) return REFUSE;  /* (the final newline among them: never skipped over) */
            close += 2;
        } else if (*close < 0x20) return REFUSE;
        else close++;
    }
    if (c != NULL && reserve(c, (size_t)(close - p))) return ERROR;
    char *out = c != NULL ? c->data + c->data_len : NULL;
    char *o = out;
#define PUT(b)                      \
    do {                            \
        if (o) *o++ = (char)(b);    \
    } while (0)
    while (p < close) {
        const unsigned char b = *p;
        if (plain[b]) {
            PUT(b);
            p++;
        } else if (b >= 0x80) {
            const int n = utf8_len(p, close);
            if (n == 0) return REFUSE;
            if (o) {
                memcpy(o, p, (size_t)n);
                o += n;
            }
            p += n;
        } else if (b == '\\') {
            const unsigned char e = p[1];
            p += 2;
            switch (e) {
                case '"': PUT('"'); break;
                case '\\': PUT('\\'); break;
                case '/': PUT('/'); break;
                case 'b': PUT('\b'); break;
                case 'f': PUT('\f'); break;
                case 'n': PUT('\n'); break;
                case 'r': PUT('\r'); break;
                case 't': PUT('\t'); break;
                case 'u': {
                    unsigned u, lo;
                    if (close - p < 4 || hex4(p, &u)) return REFUSE;
                    p += 4;
                    if (u >= 0xDC00 && u <= 0xDFFF) return REFUSE;
                    if (u >= 0xD800 && u <= 0xDBFF) {
                        if (close - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) || lo < 0xDC00 ||
                            lo > 0xDFFF)
                            return REFUSE;
                        p += 6;
                        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    if (u < 0x80) PUT(u);
                    else if (u < 0x800) {
                        PUT(0xC0 | u >> 6);
                        PUT(0x80 | (u & 0x3F));
                    } else if (u < 0x10000) {
                        PUT(0xE0 | u >> 12);
                        PUT(0x80 | (u >> 6 & 0x3F));
                        PUT(0x80 | (u & 0x3F));
                    } else {
                        PUT(0xF0 | u >> 18);
                        PUT(0x80 | (u >> 12 & 0x3F));
                        PUT(0x80 | (u >> 6 & 0x3F));
                        PUT(0x80 | (u & 0x3F));
                    }
                    break;
                }
                default: return REFUSE;
            }
        } else return REFUSE; /* unreachable: control characters were refused above */
    }
#undef PUT
    if (c != NULL) c->data_len += (size_t)(o - out);
    *pp = close + 1;
    return 0;
}

/* An integer -?(0|[1-9][0-9]*) of at most `max` (and at least -max - 1); a fraction or exponent is left to the
 * caller's check of what follows (pyarrow refuses both in an int field). */
static inline int int_value(const unsigned char **pp, uint64_t max, int64_t *out) {
    const unsigned char *p = *pp;
    const int neg = *p == '-';
    p += neg;
    if (*p < '0' || *p > '9') return REFUSE;
    uint64_t v = 0;
    if (*p == '0') p++;
    else {
        const unsigned char *start = p;
        while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
        if (p - start > 19) return REFUSE;  /* 19 digits never wrap a uint64 */
    }
    if (v > max + (uint64_t)neg) return REFUSE;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    *pp = p;
    return 0;
}

static inline int literal(const unsigned char **pp, const unsigned char *end, const char *word, size_t n) {
    if ((size_t)(end - *pp) <= n || memcmp(*pp, word, n) != 0) return REFUSE;
    *pp += n;
    return 0;
}

/* A value of a key that is no field: checked as pyarrow's parser checks it (which then ignores it). */
static int skip_value(Scan *s, const unsigned char **pp) {
    const unsigned char *p = *pp;
    int64_t v;
    switch (*p) {
        case 'n': return literal(pp, s->end, "null", 4);
        case 't': return literal(pp, s->end, "true", 4);
        case 'f': return literal(pp, s->end, "false", 5);
        case '"': *pp = p + 1; return string_value(NULL, pp);
        default: return int_value(pp, INT64_MAX, &v);
    }
}

static int field_value(Scan *s, Column *c, Py_ssize_t row, const unsigned char **pp) {
    const unsigned char *p = *pp;
    if (*p == 'n') return literal(pp, s->end, "null", 4);
    if (c->valid == NULL && first_value(s, c)) return ERROR;
    int r;
    switch (c->type) {
        case T_STRING: {
            if (*p != '"') return REFUSE;
            /* rows without a value since the last one: empty (their offsets stay where the data ends) */
            for (Py_ssize_t i = c->filled + 1; i <= row; i++) c->offsets[i] = (int32_t)c->data_len;
            *pp = p + 1;
            if ((r = string_value(c, pp))) return r;
            if (c->data_len > INT32_MAX) return REFUSE;  /* beyond int32 offsets: pyarrow cuts chunks */
            c->offsets[row + 1] = (int32_t)c->data_len;
            c->filled = row + 1;
            break;
        }
        case T_INT64: {
            int64_t v;
            if ((r = int_value(pp, INT64_MAX, &v))) return r;
            ((int64_t *)c->values)[row] = v;
            break;
        }
        case T_INT32: {
            int64_t v;
            if ((r = int_value(pp, INT32_MAX, &v))) return r;
            ((int32_t *)c->values)[row] = (int32_t)v;
            break;
        }
        default: { /* T_BOOL */
            if (*p == 't') {
                if ((r = literal(pp, s->end, "true", 4))) return r;
                ((uint8_t *)c->values)[row >> 3] |= (uint8_t)(1u << (row & 7));
            } else if ((r = literal(pp, s->end, "false", 5))) return r;
        }
    }
    c->valid[row >> 3] |= (uint8_t)(1u << (row & 7));
    c->count++;
    return 0;
}

/* The field named by the key at p (after its opening quote), -1 for an unknown key; *pp: after the closing quote.
 * Lines repeat the same keys in the same order, so the field that followed the previous key last time is tried
 * first, and the fields one by one (length first) only when it is not that one. */
static int key(Scan *s, int guess, const unsigned char **pp) {
    const unsigned char *p = *pp;
    const size_t left = (size_t)(s->end - p);
    if (guess >= 0) {
        const Column *g = &s->cols[guess];
        if (left > g->len && p[g->len] == '"' && memcmp(p, g->name, g->len) == 0) {
            *pp = p + g->len + 1;
            return guess;
        }
    }
    const unsigned char *q = p;
    while (*q >= 0x20 && *q < 0x7F && *q != '"' && *q != '\\') q++;
    if (*q != '"') return -2; /* an escape, a control character or a byte that is not ASCII: refused */
    const size_t len = (size_t)(q - p);
    *pp = q + 1;
    for (int i = 0; i < s->ncols; i++)
        if (s->cols[i].len == len && memcmp(s->cols[i].name, p, len) == 0) return i;
    return -1;
}

static int scan_lines(Scan *s) {
    const unsigned char *p = s->p;
    const int unknown = s->ncols + 1;
    for (Py_ssize_t row = 0; row < s->rows; row++) {
        const unsigned char *line = p;
        int prev = s->ncols, r;
        p = skip_ws(p);
        if (*p++ != '{') return REFUSE;
        p = skip_ws(p);
        if (*p == '}') p++;
        else
            for (;;) {
                if (*p++ != '"') return REFUSE;
                const int k = key(s, s->next[prev], &p);
                if (k == -2) return REFUSE;
                const int here = k >= 0 ? k : unknown;
                s->next[prev] = k;
                prev = here;
                p = skip_ws(p);
                if (*p++ != ':') return REFUSE;
                p = skip_ws(p);
                if (k >= 0) {
                    Column *c = &s->cols[k];
                    if (c->seen == row) return REFUSE;
                    c->seen = row;
                    r = field_value(s, c, row, &p);
                } else r = skip_value(s, &p);
                if (r) return r;
                p = skip_ws(p);
                if (*p == ',') {
                    p = skip_ws(p + 1);
                    continue;
                }
                if (*p++ != '}') return REFUSE;
                break;
            }
        p = skip_ws(p);
        if (*p != '\n' || p - line > s->max_line) return REFUSE;
        p++;
    }
    /* the rows after a string column's last value */
    for (int i = 0; i < s->ncols; i++) {
        Column *c = &s->cols[i];
        if (c->offsets != NULL)
            for (Py_ssize_t j = c->filled + 1; j <= s->rows; j++) c->offsets[j] = (int32_t)c->data_len;
    }
    return 0;
}

static void free_columns(Column *cols, int n) {
    for (int i = 0; i < n; i++) {
        free(cols[i].name);
        free(cols[i].valid);
        free(cols[i].values);
        free(cols[i].offsets);
        free(cols[i].data);
    }
    free(cols);
}

/* The column's tuple for Python; its buffers are handed over to Buffer objects (NULL'd here). */
static PyObject *column_result(Column *c, Py_ssize_t rows) {
    if (c->count == 0) return Py_NewRef(Py_None);
    const Py_ssize_t bits = (rows + 7) / 8, nulls = rows - c->count;
    PyObject *t = PyTuple_New(c->type == T_STRING ? 4 : 3), *o;
    if (t == NULL) return NULL;
    PyTuple_SET_ITEM(t, 0, PyLong_FromSsize_t(nulls));
    if (nulls == 0) {
        free(c->valid);
        o = Py_NewRef(Py_None);
    } else o = buffer_of(c->valid, bits);
    c->valid = NULL;
    PyTuple_SET_ITEM(t, 1, o);
    if (c->type == T_STRING) {
        PyTuple_SET_ITEM(t, 2, buffer_of(c->offsets, (rows + 1) * (Py_ssize_t)sizeof(int32_t)));
        PyTuple_SET_ITEM(t, 3, buffer_of(c->data, (Py_ssize_t)c->data_len));
        c->offsets = NULL;
        c->data = NULL;
    } else {
        const Py_ssize_t size = c->type == T_INT64 ? rows * 8 : c->type == T_INT32 ? rows * 4 : bits;
        PyTuple_SET_ITEM(t, 2, buffer_of(c->values, size));
        c->values = NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++)
        if (PyTuple_GET_ITEM(t, i) == NULL) {
            Py_DECREF(t);
            return NULL;
        }
    return t;
}

/* The fields as Columns, or NULL with an exception: names must be plain (what a key without escapes can be). */
static Column *read_fields(PyObject *fields, int *ncols) {
    PyObject *seq = PySequence_Fast(fields, "fields must be a sequence of (name, type)");
    if (seq == NULL) return NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Column *cols = n > 0 && n < 4096 ? calloc((size_t)n, sizeof(Column)) : NULL;
    if (cols == NULL) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "fields: 1 to 4095 (name, type) pairs");
        return NULL;
    }
    static const char *types[] = {"string", "int64", "int32", "bool"};
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *name, *type;
        Py_ssize_t len;
        Column *c = &cols[i];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "s#s", &name, &len, &type)) goto fail;
        c->type = -1;
        for (int t = 0; t < 4; t++)
            if (strcmp(type, types[t]) == 0) c->type = t;
        int plain_name = len > 0;
        for (Py_ssize_t j = 0; j < len; j++)
            if ((unsigned char)name[j] < 0x20 || (unsigned char)name[j] >= 0x7F || name[j] == '"' || name[j] == '\\') plain_name = 0;
        for (Py_ssize_t j = 0; j < i; j++)
            if (cols[j].len == (size_t)len && memcmp(cols[j].name, name, (size_t)len) == 0) plain_name = 0;
        if (c->type < 0 || !plain_name) {
            PyErr_Format(PyExc_ValueError, "field %zd: a plain ASCII name, given once, and a type of "
                         "string, int64, int32, bool", i);
            goto fail;
        }
        if ((c->name = malloc((size_t)len)) == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        memcpy(c->name, name, (size_t)len);
        c->len = (size_t)len;
        c->seen = -1;
    }
    Py_DECREF(seq);
    *ncols = (int)n;
    return cols;
fail:
    Py_DECREF(seq);
    free_columns(cols, (int)n);
    return NULL;
}

static PyObject *scan(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer in;
    PyObject *fields, *res = NULL;
    Py_ssize_t max_line;
    if (!PyArg_ParseTuple(args, "y*On", &in, &fields, &max_line)) return NULL;
    int ncols = 0;
    Column *cols = read_fields(fields, &ncols);
    int *next = cols != NULL ? malloc(((size_t)ncols + 2) * sizeof(int)) : NULL;
    if (cols == NULL || next == NULL) {
        if (cols != NULL) PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < ncols + 2; i++) next[i] = -1;
    Scan s = {in.buf, (const unsigned char *)in.buf + in.len, 0, max_line, cols, ncols, next, 0};
    int r = REFUSE;
    Py_BEGIN_ALLOW_THREADS
    if (in.len > 0 && s.end[-1] == '\n') {
        for (const unsigned char *p = s.p; (p = memchr(p, '\n', (size_t)(s.end - p))) != NULL; p++) s.rows++;
        r = scan_lines(&s);
    }
    Py_END_ALLOW_THREADS
    if (r == ERROR) {
        PyErr_NoMemory();
        goto done;
    }
    if (r == REFUSE) {
        res = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *list = PyList_New(ncols);
    if (list == NULL) goto done;
    for (int i = 0; i < ncols; i++) {
        PyObject *t = column_result(&cols[i], s.rows);
        if (t == NULL) {
            Py_DECREF(list);
            goto done;
        }
        PyList_SET_ITEM(list, i, t);
    }
    res = Py_BuildValue("(nN)", s.rows, list);
done:
    if (cols != NULL) free_columns(cols, ncols);
    free(next);
    PyBuffer_Release(&in);
    return res;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, fields, max_line) -> (rows, columns) or None: the JSON Lines of `data` as Arrow buffers per "
     "field, None when a line is outside the simple subset (see the module's doc)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ledgerscan",
    "The audit ledger's JSON Lines as Arrow buffers (spark_analytics/ledger.py): the subset binlogd's ledger writer "
    "emits, exactly as pyarrow.json parses it with the ledger's schema; None for anything else.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ledgerscan(void) {
    tables();
    if (PyType_Ready(&BufferType) < 0) return NULL;
    return PyModule_Create(&module);
}
