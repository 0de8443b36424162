/* The relay's per-read hot walk in C (optional: protocol/dump_runs.py and protocol/groups.py have the same walks in
 * Python/numpy and use them when this module is not built), and the store's GTID walk (gtid_walk, below; the store
 * walks in Python without it). The functions only read inside the buffers they are
 * given (every length is checked before it is used) and release the GIL while they walk, so the relay's event loop
 * (reading, checking) and its writer thread (storing) run on two cores.
 *
 * scan_packets(data, seq, crc, start) -> (run, ends, packets, used)
 *   The dump packets of `data` from offset `start` (where sequence id `seq` is expected) that each hold one ordinary
 *   event: the sequence id in order, a 0x00 marker, at least a header (and a CRC with `crc`), shorter than a 16 MiB
 *   part, not a FORMAT_DESCRIPTION_EVENT, the header's event_length equal to the packet's, and with `crc` its CRC32
 *   right. It stops before the first other packet (or a torn one at the end). `run`: their events back to back
 *   (bytes), `ends`: where each ends in `run` (a bytearray of native int64), `packets`: how many, `used`: the offset
 *   in `data` after them. The same as dump_runs.scan_packets_py, without its minimum of packets.
 *
 * walk_groups(data, ends, i, j, state) -> (k, state, last, groups)
 *   GroupTracker.feed_run's transitions over events i..j-1 of a run (`ends`: native int64, event e ends at ends[e],
 *   the first starts at 0): a GTID event opens a standalone group or a transaction by its FL_STANDALONE flag, an
 *   XID or XA_PREPARE ends a transaction, any other event inside a transaction changes nothing. It stops at the
 *   first event these do not decide (a QUERY inside a transaction, any non-GTID event outside one, a GTID too short
 *   to read): `k`, which the caller feeds to GroupTracker.feed (protocol/groups.py, the rule's home). `last`: the
 *   index of the last event that ended a group (-1: none), `groups`: how many did.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HEADER_LEN 19
#define CRC_LEN 4
#define MAX_PACKET 0xFFFFFF
#define FDE 15
#define QUERY 2
#define XID 16
#define GTID 162
#define XA_PREPARE 38
#define GTID_BODY 13 /* seq_no 8, domain_id 4, flags2 1 */

/* GroupTracker's states (protocol/groups.py) */
#define OUTSIDE 0
#define STANDALONE 1
#define TRANSACTION 2

static inline uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* CRC32 (zlib's polynomial), slicing by 8: per ~180-byte event about twice as fast as zlib's crc32() is on such
 * short buffers (its per-call set-up), and as fast as zlib over a whole read. T: the tables, filled at import. */
static uint32_t T[8][256];

static void crc_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        T[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++) T[t][i] = (T[t - 1][i] >> 8) ^ T[0][T[t - 1][i] & 0xFF];
}

static uint32_t crc_of(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (; n >= 8; p += 8, n -= 8) {
        const uint32_t a = u32(p) ^ c, b = u32(p + 4);
        c = T[7][a & 0xFF] ^ T[6][a >> 8 & 0xFF] ^ T[5][a >> 16 & 0xFF] ^ T[4][a >> 24] ^ T[3][b & 0xFF] ^
            T[2][b >> 8 & 0xFF] ^ T[1][b >> 16 & 0xFF] ^ T[0][b >> 24];
    }
    while (n--) c = (c >> 8) ^ T[0][(c ^ *p++) & 0xFF];
    return c ^ 0xFFFFFFFFu;
}

static PyObject *scan_packets(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer in;
    int seq, crc;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "y*ipn", &in, &seq, &crc, &start)) return NULL;
    PyObject *run = NULL, *ends = NULL, *res = NULL;
    const unsigned char *d = in.buf;
    const Py_ssize_t n = in.len;
    if (start < 0 || start > n) {
        PyErr_SetString(PyExc_ValueError, "start outside the data");
        goto done;
    }
    const Py_ssize_t min_len = 1 + HEADER_LEN + (crc ? CRC_LEN : 0);
    Py_ssize_t p = start, count = 0, bytes = 0;
    unsigned s = (unsigned)seq & 0xFF;
    /* pass 1: how far the packets go (every check, the CRCs included) */
    Py_BEGIN_ALLOW_THREADS
    while (n - p >= 4) {
        const Py_ssize_t length = d[p] | d[p + 1] << 8 | d[p + 2] << 16;
        if (length > n - p - 4) break; /* torn: the rest arrives with the next read */
        if (d[p + 3] != s || length < min_len || length >= MAX_PACKET || d[p + 4] != 0) break;
        const unsigned char *ev = d + p + 5;
        const Py_ssize_t ev_len = length - 1;
        if (ev[4] == FDE || (Py_ssize_t)u32(ev + 9) != ev_len) break;
        if (crc && crc_of(ev, (size_t)(ev_len - CRC_LEN)) != u32(ev + ev_len - CRC_LEN)) break;
        count++;
        bytes += ev_len;
        s = (s + 1) & 0xFF;
        p += 4 + length;
    }
    Py_END_ALLOW_THREADS
    const Py_ssize_t used = p;
    run = PyBytes_FromStringAndSize(NULL, bytes);
    ends = PyByteArray_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    if (run == NULL || ends == NULL) goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(run);
    int64_t *e = (int64_t *)PyByteArray_AS_STRING(ends);
    /* pass 2: the events without their packet headers (the packets pass 1 took; their lengths are checked again,
     * so a buffer another thread changed meanwhile cannot make it read or write out of bounds) */
    int changed = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t at = 0;
    for (Py_ssize_t q = start, i = 0; i < count; i++) {
        if (used - q < 5) {
            changed = 1;
            break;
        }
        const Py_ssize_t ev_len = (d[q] | d[q + 1] << 8 | d[q + 2] << 16) - 1;
        if (ev_len < HEADER_LEN || ev_len > bytes - at || ev_len > used - q - 5) {
            changed = 1;
            break;
        }
        memcpy(out + at, d + q + 5, (size_t)ev_len);
        at += ev_len;
        e[i] = at;
        q += 5 + ev_len;
    }
    Py_END_ALLOW_THREADS
    if (changed) {
        PyErr_SetString(PyExc_RuntimeError, "the data changed during the scan");
        goto done;
    }
    res = Py_BuildValue("OOnn", run, ends, count, used);
done:
    Py_XDECREF(run);
    Py_XDECREF(ends);
    PyBuffer_Release(&in);
    return res;
}

static PyObject *walk_groups(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer in, ends_in;
    Py_ssize_t i, j;
    int state;
    if (!PyArg_ParseTuple(args, "y*y*nni", &in, &ends_in, &i, &j, &state)) return NULL;
    PyObject *res = NULL;
    const unsigned char *d = in.buf;
    const int64_t *ends = ends_in.buf;
    const Py_ssize_t count = ends_in.len / (Py_ssize_t)sizeof(int64_t);
    if (ends_in.len % (Py_ssize_t)sizeof(int64_t) || i < 0 || j < i || j > count) {
        PyErr_SetString(PyExc_ValueError, "bad ends or range");
        goto done;
    }
    if (state != OUTSIDE && state != STANDALONE && state != TRANSACTION) {
        PyErr_SetString(PyExc_ValueError, "bad state");
        goto done;
    }
    Py_ssize_t k = i, last = -1, groups = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; k < j; k++) {
        const int64_t from = k ? ends[k - 1] : 0, to = ends[k];
        if (from < 0 || to > in.len || to - from < HEADER_LEN) {
            bad = 1;
            break;
        }
        const unsigned char typ = d[from + 4];
        if (typ == GTID) {
            if (to - from < HEADER_LEN + GTID_BODY) break; /* GroupTracker.feed says what is wrong */
            state = d[from + HEADER_LEN + 12] & 1 ? STANDALONE : TRANSACTION;
        } else if (state == TRANSACTION) {
            if (typ == XID || typ == XA_PREPARE) {
                state = OUTSIDE;
                last = k;
                groups++;
            } else if (typ == QUERY) {
                break; /* COMMIT, ROLLBACK, XA ...: the statement's text decides */
            }
        } else {
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "an event end outside the data or shorter than a header");
        goto done;
    }
    res = Py_BuildValue("ninn", k, state, last, groups);
done:
    PyBuffer_Release(&in);
    PyBuffer_Release(&ends_in);
    return res;
}

/* gtid_walk(data) -> (used, bad, domains, servers, seqs)
 *   The store's GTID walk over a file's bytes (BinlogStore._add_gtids): whole events from offset 0, stopping before
 *   a torn last event. `used`: where the last whole event ends; `bad`: the offset of an event whose length is
 *   impossible (shorter than a header or over MAX_EVENT), where the walk stopped, else -1. For each GTID event long
 *   enough to read, in order: its domain (native uint32 in `domains`), server_id (uint32, `servers`) and seq_no
 *   (uint64, `seqs`); BinlogState.update_all applies them (the state's rule stays in protocol/gtid.py). Two passes
 *   without the GIL (count, then fill): a 45 MB file's 240 000 headers walked in Python held the GIL ~1.9 s. */
#define MAX_EVENT (1u << 30)

static Py_ssize_t gtid_pass(const unsigned char *d, Py_ssize_t n, Py_ssize_t *bad, uint32_t *doms, uint32_t *srvs,
                            uint64_t *seqs, Py_ssize_t *count) {
    Py_ssize_t p = 0, k = 0;
    *bad = -1;
    while (n - p >= HEADER_LEN) {
        const unsigned char *h = d + p;
        uint32_t length = u32(h + 9);
        if (length < HEADER_LEN || length > MAX_EVENT) {
            *bad = p;
            break;
        }
        if (p + (Py_ssize_t)length > n) break;
        if (h[4] == GTID && length >= HEADER_LEN + GTID_BODY) {
            if (doms != NULL) {
                const unsigned char *b = h + HEADER_LEN;
                seqs[k] = (uint64_t)u32(b) | (uint64_t)u32(b + 4) << 32;
                doms[k] = u32(b + 8);
                srvs[k] = u32(h + 5);
            }
            k++;
        }
        p += length;
    }
    *count = k;
    return p;
}

static PyObject *gtid_walk(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer in;
    if (!PyArg_ParseTuple(args, "y*", &in)) return NULL;
    PyObject *res = NULL, *doms = NULL, *srvs = NULL, *seqs = NULL;
    Py_ssize_t used, bad, count;
    Py_BEGIN_ALLOW_THREADS
    used = gtid_pass(in.buf, in.len, &bad, NULL, NULL, NULL, &count);
    Py_END_ALLOW_THREADS
    doms = PyBytes_FromStringAndSize(NULL, count * 4);
    srvs = PyBytes_FromStringAndSize(NULL, count * 4);
    seqs = PyBytes_FromStringAndSize(NULL, count * 8);
    if (doms == NULL || srvs == NULL || seqs == NULL) goto done;
    if (count) {
        uint32_t *dp = (uint32_t *)PyBytes_AS_STRING(doms), *sp = (uint32_t *)PyBytes_AS_STRING(srvs);
        uint64_t *qp = (uint64_t *)PyBytes_AS_STRING(seqs);
        Py_ssize_t bad2, count2;  /* (the same events: `used` ends the first pass) */
        Py_BEGIN_ALLOW_THREADS
        gtid_pass(in.buf, used, &bad2, dp, sp, qp, &count2);
        Py_END_ALLOW_THREADS
    }
    res = Py_BuildValue("nnOOO", used, bad, doms, srvs, seqs);
done:
    Py_XDECREF(doms);
    Py_XDECREF(srvs);
    Py_XDECREF(seqs);
    PyBuffer_Release(&in);
    return res;
}

/* The starts of the whole events in data[start:stop) (binlog_decode.walk's sequential step): from `start`, while a
 * header fits before `stop`, the event's length (at +9) is read; shorter than a header stops it (an error), an
 * event running past `stop` ends it. `starts`: NULL to count only. Returns where it stopped. */
static Py_ssize_t starts_pass(const unsigned char *d, Py_ssize_t start, Py_ssize_t stop, int64_t *starts,
                              Py_ssize_t *count, int64_t *bad) {
    Py_ssize_t p = start, k = 0;
    *bad = -1;
    while (p + HEADER_LEN <= stop) {
        const uint32_t length = u32(d + p + 9);
        if (length < HEADER_LEN) {
            *bad = length;
            break;
        }
        if ((Py_ssize_t)length > stop - p) break;
        if (starts != NULL) starts[k] = p;
        k++;
        p += length;
    }
    *count = k;
    return p;
}

static PyObject *event_starts(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer in;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "y*nn", &in, &start, &stop)) return NULL;
    if (start < 0 || stop < start || stop > in.len) {
        PyBuffer_Release(&in);
        PyErr_SetString(PyExc_ValueError, "event_starts: the range is not inside the buffer");
        return NULL;
    }
    PyObject *res = NULL, *starts = NULL;
    Py_ssize_t end, count;
    int64_t bad;
    Py_BEGIN_ALLOW_THREADS
    end = starts_pass(in.buf, start, stop, NULL, &count, &bad);
    Py_END_ALLOW_THREADS
    starts = PyBytes_FromStringAndSize(NULL, count * 8);
    if (starts == NULL) goto done;
    if (count) {
        int64_t *out = (int64_t *)PyBytes_AS_STRING(starts);
        Py_ssize_t count2;
        int64_t bad2;
        Py_BEGIN_ALLOW_THREADS
        starts_pass(in.buf, start, end, out, &count2, &bad2); /* the same events: `end` ends the first pass */
        Py_END_ALLOW_THREADS
    }
    res = Py_BuildValue("OnL", starts, end, (long long)bad);
done:
    Py_XDECREF(starts);
    PyBuffer_Release(&in);
    return res;
}

static PyMethodDef methods[] = {
    {"scan_packets", scan_packets, METH_VARARGS, "The ordinary event packets of a read, checked (see the module)."},
    {"walk_groups", walk_groups, METH_VARARGS, "GroupTracker.feed_run's common transitions (see the module)."},
    {"gtid_walk", gtid_walk, METH_VARARGS, "The GTIDs of a file's whole events, for the store (see the module)."},
    {"event_starts", event_starts, METH_VARARGS, "The starts of the whole events of a range (see the function)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dumpscan", "The relay's per-read hot walk in C.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__dumpscan(void) {
    crc_tables();
    return PyModule_Create(&module);
}
