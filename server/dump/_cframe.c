/* The dump's inner loop for runs of events sent as stored, in C (optional: framing.py has the same loop in Python
 * and uses it when this module is not built).
 *
 * frame_sends(chunk, start, actions, seq, out, holes) -> (end, seq, sent, skipped, sent_end)
 *   Appends a MySQL packet (3-byte length, sequence id, 0x00 OK byte, the event) to the bytearray `out` for every
 *   whole event of `chunk` from offset `start` whose entry in `actions` (DecisionTable.by_type_and_skip_flag as
 *   512 bytes: index type | 0x100 when header flag 0x8000 is set) is 0 (SEND); with `holes` true, events whose
 *   entry is 1 (HOLE) are left out (a dump without the audit ledger: a hole needs no bookkeeping). It stops before
 *   the first other event: another action, an incomplete event, a length below the header's or >= 16 MiB - 1
 *   (those take several packets: the Python path frames them). Returns where it stopped, the next sequence id,
 *   the events framed and left out, and the end of the last one framed (-1: none). The rule stays
 *   protocol/decision.py's: this only applies its table.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define HEADER_LEN 19
#define BIG (0xFFFFFF - 1)

static inline uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static PyObject *frame_sends(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer chunk, acts;
    Py_ssize_t start;
    int seq, holes;
    PyObject *out;
    if (!PyArg_ParseTuple(args, "y*ny*iYp", &chunk, &start, &acts, &seq, &out, &holes)) return NULL;
    PyObject *res = NULL;
    if (acts.len != 512) {
        PyErr_SetString(PyExc_ValueError, "actions must be 512 bytes");
        goto done;
    }
    const unsigned char *src = chunk.buf, *act = acts.buf;
    Py_ssize_t n = chunk.len, p = start < 0 ? 0 : start, count = 0, skipped = 0, bytes = 0, sent_end = -1;
    unsigned char hole = holes ? 1 : 0xFF;  /* (no action is 0xFF) */
    /* pass 1: how far the run goes, and what it sends */
    while (p + HEADER_LEN <= n) {
        uint32_t length = u32(src + p + 9);
        if (length < HEADER_LEN || length >= BIG || p + (Py_ssize_t)length > n) break;
        unsigned char a = act[src[p + 4] | ((src[p + 18] & 0x80) << 1)];
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
        /* pass 2: the packets */
        for (p = start; p < end;) {
            uint32_t length = u32(src + p + 9), plen = length + 1;
            if (act[src[p + 4] | ((src[p + 18] & 0x80) << 1)]) {
                p += length;
                continue;
            }
            dst[0] = plen & 0xFF;
            dst[1] = plen >> 8 & 0xFF;
            dst[2] = plen >> 16 & 0xFF;
            dst[3] = (unsigned char)seq;
            dst[4] = 0;
            memcpy(dst + 5, src + p, length);
            dst += 5 + length;
            p += length;
            seq = (seq + 1) & 0xFF;
        }
    }
    res = Py_BuildValue("ninnn", end, seq, count, skipped, sent_end);
done:
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&acts);
    return res;
}

static PyMethodDef methods[] = {
    {"frame_sends", frame_sends, METH_VARARGS, "Frame the run of events sent as stored from `start` (see the module)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cframe", "The dump's inner loop in C.", -1, methods};

PyMODINIT_FUNC PyInit__cframe(void) { return PyModule_Create(&module); }
