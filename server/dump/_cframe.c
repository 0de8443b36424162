/* The dump's inner loop for runs of events sent as stored, in C (optional: framing.py has the same loop in Python
 * and uses it when this module is not built).
 *
 * frame_sends(chunk, start, actions, seq, out, holes, gtid=b"", crc=False)
 *     -> (end, seq, sent, skipped, sent_end, dummies, begins)
 *   `chunk` is one buffer, or a tuple of buffers read as their concatenation (a span of the store's shared blocks,
 *   framed where they lie: joining them first was a second copy of every byte, issue 12); offsets are in that
 *   concatenation, and events and headers may cross from one buffer into the next.
 *   Appends a MySQL packet (3-byte length, sequence id, 0x00 OK byte, the event) to the bytearray `out` for every
 *   whole event of `chunk` from offset `start` whose entry in `actions` (DecisionTable.by_type_and_skip_flag as
 *   512 bytes: index type | 0x100 when header flag 0x8000 is set) is 0 (SEND); with `holes` true, events whose
 *   entry is 1 (HOLE) are left out (a dump without the audit ledger: a hole needs no bookkeeping). With `gtid`
 *   (4 bytes: the action of a GTID event whose entry is 4, PEEK_GTID, by flagged << 1 | FL_STANDALONE), also the
 *   same-length rewrites a replica without GTID or annotate support gets: 2 (DUMMY) and 3 (BEGIN), made as
 *   protocol/rewrite.py's dummy_event/begin_event make them (`crc`: the binlog has CRC32 checksums, recomputed);
 *   before, a capability-0 dump left this loop at every transaction's GTID (issue 12).
 *   It stops before the first other event: another action, an incomplete event, a length below the header's or
 *   >= 16 MiB - 1 (those take several packets: the Python path frames them), an event the rewrite refuses (the
 *   Python path raises MariaDB's error for it). Returns where it stopped, the next sequence id, the events framed
 *   as stored and left out, the end of the last one framed (-1: none), and the dummies and BEGINs framed. The rule
 *   stays protocol/decision.py's, the rewrites protocol/rewrite.py's: this only applies them
 *   (tests/test_dump_cframe.py proves the bytes equal).
 *   The copies of a run of GIL_FREE bytes or more are made with the GIL released (the read-ahead thread runs
 *   meanwhile); `out` must not be used by another thread during the call, as for any bytearray method.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define HEADER_LEN 19
#define BIG (0xFFFFFF - 1)
#define MAX_PARTS 64
#define GIL_FREE (64 << 10)
#define GTID_EVENT 162
#define GTID_POST_HEADER_LEN 19
#define QUERY_EVENT 2
#define USER_VAR_EVENT 14
#define FLAGS_OFFSET 17
#define THREAD_SPECIFIC_F 0x0004
#define SUPPRESS_USE_F 0x0008
#define Q_TIME_ZONE_CODE 5
#define A_SEND 0
#define A_HOLE 1
#define A_DUMMY 2
#define A_BEGIN 3
#define A_PEEK_GTID 4

static uint32_t crc_table[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_table[t][i] = crc_table[0][crc_table[t - 1][i] & 0xFF] ^ (crc_table[t - 1][i] >> 8);
}

/* zlib's crc32(0, p, n) (slicing by 8) */
static uint32_t crc32_of(const unsigned char *p, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][lo >> 8 & 0xFF] ^ crc_table[5][lo >> 16 & 0xFF] ^
            crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n-- > 0) c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static inline uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

typedef struct {
    Py_buffer view[MAX_PARTS];
    Py_ssize_t at[MAX_PARTS + 1]; /* logical offset of each part; at[n] = the total */
    int n;
} Parts;

/* A cursor: the part holding logical offset p (parts are walked forwards only). */
typedef struct {
    const Parts *s;
    int i;
} Cursor;

static inline void seek(Cursor *c, Py_ssize_t p) {
    while (c->i + 1 < c->s->n && p >= c->s->at[c->i + 1]) c->i++;
}

/* The header at p (p + HEADER_LEN <= total): a pointer into the part when it lies in one, else gathered in `tmp`. */
static inline const unsigned char *header(Cursor *c, Py_ssize_t p, unsigned char *tmp) {
    seek(c, p);
    const Parts *s = c->s;
    Py_ssize_t off = p - s->at[c->i];
    if (p + HEADER_LEN <= s->at[c->i + 1]) return (const unsigned char *)s->view[c->i].buf + off;
    Py_ssize_t got = 0;
    for (int i = c->i; got < HEADER_LEN && i < s->n; i++, off = 0) {
        Py_ssize_t k = s->view[i].len - off;
        if (k > HEADER_LEN - got) k = HEADER_LEN - got;
        memcpy(tmp + got, (const unsigned char *)s->view[i].buf + off, k);
        got += k;
    }
    return tmp;
}

/* Copy the logical bytes [p, p + len) to dst. */
static inline void copy_out(Cursor *c, Py_ssize_t p, Py_ssize_t len, unsigned char *dst) {
    seek(c, p);
    const Parts *s = c->s;
    Py_ssize_t off = p - s->at[c->i];
    for (int i = c->i; len > 0 && i < s->n; i++, off = 0) {
        Py_ssize_t k = s->view[i].len - off;
        if (k > len) k = len;
        memcpy(dst, (const unsigned char *)s->view[i].buf + off, k);
        dst += k;
        len -= k;
    }
}

/* The logical byte at p (>= the cursor's part), the cursor left where it was (the caller copies from before p). */
static inline unsigned char byte_at(const Cursor *c, Py_ssize_t p) {
    Cursor t = *c;
    seek(&t, p);
    return ((const unsigned char *)t.s->view[t.i].buf)[p - t.s->at[t.i]];
}

typedef struct {
    const unsigned char *act; /* 512 entries */
    const unsigned char *gtid; /* 4 entries, or NULL: no rewrites */
    unsigned char hole;       /* the HOLE action when holes are left out here, else 0xFF (no action) */
    int crc_len;              /* 4 with CRC32 checksums */
} Rules;

/* What the loop does with the whole event at p (header h, `length` bytes): A_SEND, A_HOLE, A_DUMMY, A_BEGIN, or -1
 * (stop: the Python path takes it). A rewrite the Python path would refuse (MariaDB's errors) stops here too. */
static inline int action_of(const Cursor *c, Py_ssize_t p, const unsigned char *h, uint32_t length, const Rules *r) {
    int flagged = (h[18] & 0x80) != 0;
    unsigned char a = r->act[h[4] | flagged << 8];
    if (a == A_SEND) return A_SEND;
    if (a == r->hole) return A_HOLE;
    if (r->gtid == NULL) return -1;
    if (a == A_PEEK_GTID) {
        if (h[4] != GTID_EVENT || length < HEADER_LEN + GTID_POST_HEADER_LEN) return -1;
        a = r->gtid[flagged << 1 | (byte_at(c, p + HEADER_LEN + 12) & 1)];
        if (a == A_SEND) return A_SEND;
        if (a == r->hole) return A_HOLE;
    }
    Py_ssize_t data_len = (Py_ssize_t)length - r->crc_len;
    if (a == A_DUMMY) return data_len < 25 ? -1 : A_DUMMY;
    if (a == A_BEGIN) return data_len == 38 || data_len == 40 ? A_BEGIN : -1;
    return -1;
}

/* protocol/rewrite.py dummy_event / begin_event, in place over a copy of the event (`ev`, `length` bytes). */
static void rewrite(unsigned char *ev, uint32_t length, int action, int crc_len) {
    Py_ssize_t data_len = (Py_ssize_t)length - crc_len;
    unsigned flags = (ev[FLAGS_OFFSET] | ev[FLAGS_OFFSET + 1] << 8);
    flags = (flags & ~THREAD_SPECIFIC_F) | SUPPRESS_USE_F;
    ev[FLAGS_OFFSET] = flags & 0xFF;
    ev[FLAGS_OFFSET + 1] = flags >> 8 & 0xFF;
    unsigned char *body = ev + HEADER_LEN;
    if (action == A_BEGIN) {
        ev[4] = QUERY_EVENT;
        memset(body, 0, 11);
        unsigned char *q = body + 11;
        if (data_len == 38) {
            *q++ = 0;
            *q++ = 0;
        } else {
            *q++ = 2;
            *q++ = 0;
            *q++ = Q_TIME_ZONE_CODE;
            *q++ = 0;
        }
        *q++ = 0;
        memcpy(q, "BEGIN", 5);
    } else if (data_len < 34) {
        static const char var[] = "!dummyvar";
        Py_ssize_t name_len = data_len - 24;
        ev[4] = USER_VAR_EVENT;
        body[0] = name_len & 0xFF;
        body[1] = body[2] = body[3] = 0;
        memcpy(body + 4, var, name_len);
        body[4 + name_len] = 1;
    } else {
        char msg[96];
        int orig = ev[4];
        ev[4] = QUERY_EVENT;
        int m = snprintf(msg, sizeof msg, "# Dummy event replacing event type %d that slave cannot handle.", orig);
        Py_ssize_t room = data_len - (HEADER_LEN + 13 + 1);
        memset(body, 0, 14);
        Py_ssize_t k = m < room ? m : room;
        memcpy(body + 14, msg, k);
        memset(body + 14 + k, ' ', room - k);
    }
    if (crc_len) {
        uint32_t v = crc32_of(ev, (Py_ssize_t)length - 4);
        unsigned char *t = ev + length - 4;
        t[0] = v & 0xFF;
        t[1] = v >> 8 & 0xFF;
        t[2] = v >> 16 & 0xFF;
        t[3] = v >> 24 & 0xFF;
    }
}

static void release(Parts *s) {
    for (int i = 0; i < s->n; i++) PyBuffer_Release(&s->view[i]);
    s->n = 0;
}

static int get_parts(PyObject *chunk, Parts *s) {
    s->n = 0;
    s->at[0] = 0;
    if (!PyTuple_Check(chunk)) {
        if (PyObject_GetBuffer(chunk, &s->view[0], PyBUF_SIMPLE) < 0) return -1;
        s->n = 1;
        s->at[1] = s->view[0].len;
        return 0;
    }
    Py_ssize_t k = PyTuple_GET_SIZE(chunk);
    if (k > MAX_PARTS) {
        PyErr_SetString(PyExc_ValueError, "too many buffers in the chunk");
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(chunk, i), &s->view[s->n], PyBUF_SIMPLE) < 0) {
            release(s);
            return -1;
        }
        s->at[s->n + 1] = s->at[s->n] + s->view[s->n].len;
        s->n++;
    }
    return 0;
}

/* Pass 2: the packets of the run [start, end) into dst; returns the next sequence id. */
static int frame_run(Cursor *c, Py_ssize_t start, Py_ssize_t end, const Rules *r, int seq, unsigned char *dst) {
    unsigned char tmp[HEADER_LEN];
    for (Py_ssize_t p = start; p < end;) {
        const unsigned char *h = header(c, p, tmp);
        uint32_t length = u32(h + 9), plen = length + 1;
        int a = action_of(c, p, h, length, r);
        if (a == A_HOLE) {
            p += length;
            continue;
        }
        dst[0] = plen & 0xFF;
        dst[1] = plen >> 8 & 0xFF;
        dst[2] = plen >> 16 & 0xFF;
        dst[3] = (unsigned char)seq;
        dst[4] = 0;
        copy_out(c, p, length, dst + 5);
        if (a != A_SEND) rewrite(dst + 5, length, a, r->crc_len);
        dst += 5 + length;
        p += length;
        seq = (seq + 1) & 0xFF;
    }
    return seq;
}

static PyObject *frame_sends(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *names[] = {"chunk", "start", "actions", "seq", "out", "holes", "gtid", "crc", NULL};
    PyObject *chunk, *out;
    Py_buffer acts, gtid = {0};
    Py_ssize_t start;
    int seq, holes, crc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Ony*iYp|y*p", names, &chunk, &start, &acts, &seq, &out, &holes,
                                     &gtid, &crc))
        return NULL;
    PyObject *res = NULL;
    Parts parts;
    parts.n = 0;
    if (acts.len != 512) {
        PyErr_SetString(PyExc_ValueError, "actions must be 512 bytes");
        goto done;
    }
    if (gtid.obj != NULL && gtid.len != 0 && gtid.len != 4) {
        PyErr_SetString(PyExc_ValueError, "gtid must be 4 bytes (or empty: no rewrites)");
        goto done;
    }
    if (get_parts(chunk, &parts) < 0) goto done;
    Rules r = {acts.buf, gtid.obj != NULL && gtid.len == 4 ? gtid.buf : NULL, holes ? A_HOLE : 0xFF, crc ? 4 : 0};
    Py_ssize_t n = parts.at[parts.n], p = start < 0 ? 0 : start, count = 0, skipped = 0, bytes = 0, sent_end = -1;
    Py_ssize_t dummies = 0, begins = 0;
    unsigned char tmp[HEADER_LEN];
    Cursor c = {&parts, 0};
    /* pass 1: how far the run goes, and what it sends */
    while (p + HEADER_LEN <= n) {
        const unsigned char *h = header(&c, p, tmp);
        uint32_t length = u32(h + 9);
        if (length < HEADER_LEN || length >= BIG || p + (Py_ssize_t)length > n) break;
        int a = action_of(&c, p, h, length, &r);
        if (a < 0) break;
        if (a == A_HOLE) {
            skipped++;
        } else {
            if (a == A_SEND) count++;
            else if (a == A_DUMMY) dummies++;
            else begins++;
            bytes += length;
            sent_end = p + length;
        }
        p += length;
    }
    Py_ssize_t end = p, framed = count + dummies + begins;
    if (framed) {
        Py_ssize_t old = PyByteArray_GET_SIZE(out);
        if (PyByteArray_Resize(out, old + bytes + 5 * framed) < 0) goto done;
        unsigned char *dst = (unsigned char *)PyByteArray_AS_STRING(out) + old;
        Cursor c2 = {&parts, 0};
        if (bytes >= GIL_FREE) {
            Py_BEGIN_ALLOW_THREADS
            seq = frame_run(&c2, start < 0 ? 0 : start, end, &r, seq, dst);
            Py_END_ALLOW_THREADS
        } else {
            seq = frame_run(&c2, start < 0 ? 0 : start, end, &r, seq, dst);
        }
    }
    res = Py_BuildValue("ninnnnn", end, seq, count, skipped, sent_end, dummies, begins);
done:
    release(&parts);
    PyBuffer_Release(&acts);
    if (gtid.obj != NULL) PyBuffer_Release(&gtid);
    return res;
}

static PyMethodDef methods[] = {
    {"frame_sends", (PyCFunction)(void (*)(void))frame_sends, METH_VARARGS | METH_KEYWORDS, "Frame the run of events sent as stored from `start` (see the module)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cframe", "The dump's inner loop in C.", -1, methods};

PyMODINIT_FUNC PyInit__cframe(void) {
    crc_init();
    return PyModule_Create(&module);
}
