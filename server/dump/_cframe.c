/* The dump's inner loop for runs of events sent as stored, in C (optional: framing.py has the same loop in Python
 * and uses it when this module is not built).
 *
 * frame_sends(chunk, start, actions, seq, out, holes) -> (end, seq, sent, skipped, sent_end)
 *   `chunk` is one buffer, or a tuple of buffers read as their concatenation (a span of the store's shared blocks,
 *   framed where they lie: joining them first was a second copy of every byte, issue 12); offsets are in that
 *   concatenation, and events and headers may cross from one buffer into the next.
 *   Appends a MySQL packet (3-byte length, sequence id, 0x00 OK byte, the event) to the bytearray `out` for every
 *   whole event of `chunk` from offset `start` whose entry in `actions` (DecisionTable.by_type_and_skip_flag as
 *   512 bytes: index type | 0x100 when header flag 0x8000 is set) is 0 (SEND); with `holes` true, events whose
 *   entry is 1 (HOLE) are left out (a dump without the audit ledger: a hole needs no bookkeeping). It stops before
 *   the first other event: another action, an incomplete event, a length below the header's or >= 16 MiB - 1
 *   (those take several packets: the Python path frames them). Returns where it stopped, the next sequence id,
 *   the events framed and left out, and the end of the last one framed (-1: none). The rule stays
 *   protocol/decision.py's: this only applies its table.
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
static int frame_run(Cursor *c, Py_ssize_t start, Py_ssize_t end, const unsigned char *act, int seq,
                     unsigned char *dst) {
    unsigned char tmp[HEADER_LEN];
    for (Py_ssize_t p = start; p < end;) {
        const unsigned char *h = header(c, p, tmp);
        uint32_t length = u32(h + 9), plen = length + 1;
        if (act[h[4] | ((h[18] & 0x80) << 1)]) {
            p += length;
            continue;
        }
        dst[0] = plen & 0xFF;
        dst[1] = plen >> 8 & 0xFF;
        dst[2] = plen >> 16 & 0xFF;
        dst[3] = (unsigned char)seq;
        dst[4] = 0;
        copy_out(c, p, length, dst + 5);
        dst += 5 + length;
        p += length;
        seq = (seq + 1) & 0xFF;
    }
    return seq;
}

static PyObject *frame_sends(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *chunk, *out;
    Py_buffer acts;
    Py_ssize_t start;
    int seq, holes;
    if (!PyArg_ParseTuple(args, "Ony*iYp", &chunk, &start, &acts, &seq, &out, &holes)) return NULL;
    PyObject *res = NULL;
    Parts parts;
    parts.n = 0;
    if (acts.len != 512) {
        PyErr_SetString(PyExc_ValueError, "actions must be 512 bytes");
        goto done;
    }
    if (get_parts(chunk, &parts) < 0) goto done;
    const unsigned char *act = acts.buf;
    Py_ssize_t n = parts.at[parts.n], p = start < 0 ? 0 : start, count = 0, skipped = 0, bytes = 0, sent_end = -1;
    unsigned char hole = holes ? 1 : 0xFF; /* (no action is 0xFF) */
    unsigned char tmp[HEADER_LEN];
    Cursor c = {&parts, 0};
    /* pass 1: how far the run goes, and what it sends */
    while (p + HEADER_LEN <= n) {
        const unsigned char *h = header(&c, p, tmp);
        uint32_t length = u32(h + 9);
        if (length < HEADER_LEN || length >= BIG || p + (Py_ssize_t)length > n) break;
        unsigned char a = act[h[4] | ((h[18] & 0x80) << 1)];
        if (a == 0) {
            count++;
            bytes += length;
            sent_end = p + length;
        } else if (a == hole) {
            skipped++;
        } else {
            break;
        }
        p += length;
    }
    Py_ssize_t end = p;
    if (count) {
        Py_ssize_t old = PyByteArray_GET_SIZE(out);
        if (PyByteArray_Resize(out, old + bytes + 5 * count) < 0) goto done;
        unsigned char *dst = (unsigned char *)PyByteArray_AS_STRING(out) + old;
        Cursor c2 = {&parts, 0};
        if (bytes >= GIL_FREE) {
            Py_BEGIN_ALLOW_THREADS
            seq = frame_run(&c2, start < 0 ? 0 : start, end, act, seq, dst);
            Py_END_ALLOW_THREADS
        } else {
            seq = frame_run(&c2, start < 0 ? 0 : start, end, act, seq, dst);
        }
    }
    res = Py_BuildValue("ninnn", end, seq, count, skipped, sent_end);
done:
    release(&parts);
    PyBuffer_Release(&acts);
    return res;
}

static PyMethodDef methods[] = {
    {"frame_sends", frame_sends, METH_VARARGS, "Frame the run of events sent as stored from `start` (see the module)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cframe", "The dump's inner loop in C.", -1, methods};

PyMODINIT_FUNC PyInit__cframe(void) { return PyModule_Create(&module); }
