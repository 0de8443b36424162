/* The fan-out's socket writes in one system call (issue 12; server/dump/tail.py).
 *
 * A transaction a relay fans out to N parked dumps was N send() calls, and on a machine whose replicas run beside
 * it each call woke a reader that took the CPU at the call's return: the Nth replica waited for N-1 such
 * round trips. send_many() hands all N sends to the kernel at once through io_uring (one io_uring_enter), so the
 * readers are woken together and the caller is switched out at most once. Where io_uring is not available
 * (an old kernel, a seccomp policy, kernel.io_uring_disabled) it sends in a loop here, which still saves the
 * Python per write.
 *
 * send_many(fds, bufs) -> list[int]: for each i, bytes of bufs[i] written to fds[i] (MSG_DONTWAIT: a full socket
 * buffer writes less, the caller queues the rest behind it), -EAGAIN (nothing written) or another -errno (the
 * socket failed, or, should the ring fail after its submission, -EIO: what was written is unknown, so the caller
 * must close the connection, never write the bytes again). using_io_uring() -> bool; set_io_uring(bool) (tests and
 * comparisons: the loop of send() instead).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RING_ENTRIES 256

static int ring_fd = -2; /* -2: not tried yet, -1: unavailable */
static pid_t ring_pid;    /* the process that made the ring (a forked child makes its own) */
static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes;
static struct io_uring_cqe *cqes;
/* the ring is one per process: calls from several threads take turns (binlogd calls it from its loop's thread;
 * the GIL is released while the sends run, so the ledger's writer thread formats meanwhile) */
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;

static int ring_setup(void)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = (int)syscall(__NR_io_uring_setup, RING_ENTRIES, &p);
    if (fd < 0)
        return -1;
    if (!(p.features & IORING_FEAT_SINGLE_MMAP) || !(p.features & IORING_FEAT_NODROP)) {
        close(fd);
        return -1;
    }
    size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    size_t size = sq_size > cq_size ? sq_size : cq_size;
    char *ring = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    if (ring == MAP_FAILED) {
        close(fd);
        return -1;
    }
    void *s = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (s == MAP_FAILED) {
        munmap(ring, size);
        close(fd);
        return -1;
    }
    sq_tail = (unsigned *)(ring + p.sq_off.tail);
    sq_mask = (unsigned *)(ring + p.sq_off.ring_mask);
    sq_array = (unsigned *)(ring + p.sq_off.array);
    cq_head = (unsigned *)(ring + p.cq_off.head);
    cq_tail = (unsigned *)(ring + p.cq_off.tail);
    cq_mask = (unsigned *)(ring + p.cq_off.ring_mask);
    cqes = (struct io_uring_cqe *)(ring + p.cq_off.cqes);
    sqes = s;
    return fd;
}

/* Submit n (<= RING_ENTRIES) sends and collect their results into res[]; -1 when the ring failed (nothing sent). */
static int ring_send(int n, const int *fds, Py_buffer *views, long *res)
{
    unsigned tail = atomic_load_explicit((_Atomic unsigned *)sq_tail, memory_order_relaxed);
    unsigned mask = *sq_mask;
    for (int i = 0; i < n; i++) {
        unsigned idx = (tail + i) & mask;
        struct io_uring_sqe *sqe = &sqes[idx];
        memset(sqe, 0, sizeof *sqe);
        sqe->opcode = IORING_OP_SEND;
        sqe->fd = fds[i];
        sqe->addr = (unsigned long)views[i].buf;
        sqe->len = (unsigned)views[i].len;
        sqe->msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL;
        sqe->user_data = (unsigned long)i;
        sq_array[idx] = idx;
    }
    atomic_store_explicit((_Atomic unsigned *)sq_tail, tail + n, memory_order_release);
    int got = 0;
    int submitted = 0;
    int failures = 0;
    for (int i = 0; i < n; i++)
        res[i] = -EIO;
    while (got < n) {
        int ret = (int)syscall(__NR_io_uring_enter, ring_fd, submitted ? 0 : n, n - got, IORING_ENTER_GETEVENTS,
                               NULL, 0);
        if (ret < 0) {
            if (errno != EINTR && errno != EAGAIN && errno != EBUSY) {
                if (!submitted) {  /* nothing reached the kernel: the ring is unusable, the loop sends instead */
                    atomic_store_explicit((_Atomic unsigned *)sq_tail, tail, memory_order_release);
                    return -1;
                }
                if (++failures > 100)  /* the rest stay -EIO: their connections are closed by the caller */
                    return 0;
            }
            if (!submitted)
                continue;
        }
        submitted = 1;
        unsigned head = atomic_load_explicit((_Atomic unsigned *)cq_head, memory_order_relaxed);
        unsigned ctail = atomic_load_explicit((_Atomic unsigned *)cq_tail, memory_order_acquire);
        while (head != ctail) {
            struct io_uring_cqe *cqe = &cqes[head & *cq_mask];
            if (cqe->user_data < (unsigned long)n)
                res[cqe->user_data] = cqe->res;
            head++;
            got++;
        }
        atomic_store_explicit((_Atomic unsigned *)cq_head, head, memory_order_release);
    }
    return 0;
}

static PyObject *send_many(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *fds_obj, *bufs_obj;
    if (!PyArg_ParseTuple(args, "OO:send_many", &fds_obj, &bufs_obj))
        return NULL;
    PyObject *fseq = PySequence_Fast(fds_obj, "fds must be a sequence");
    if (fseq == NULL)
        return NULL;
    PyObject *bseq = PySequence_Fast(bufs_obj, "bufs must be a sequence");
    if (bseq == NULL) {
        Py_DECREF(fseq);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fseq);
    PyObject *out = NULL;
    int fds[RING_ENTRIES];
    long res[RING_ENTRIES];
    Py_buffer views[RING_ENTRIES];
    if (PySequence_Fast_GET_SIZE(bseq) != n) {
        PyErr_SetString(PyExc_ValueError, "fds and bufs differ in length");
        goto done;
    }
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (Py_ssize_t start = 0; start < n; start += RING_ENTRIES) {
        int m = (int)((n - start) < RING_ENTRIES ? (n - start) : RING_ENTRIES);
        int held = 0;
        for (; held < m; held++) {
            long fd = PyLong_AsLong(PySequence_Fast_GET_ITEM(fseq, start + held));
            if (fd == -1 && PyErr_Occurred())
                break;
            fds[held] = (int)fd;
            if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(bseq, start + held), &views[held], PyBUF_SIMPLE) < 0)
                break;
        }
        if (held < m) {
            for (int i = 0; i < held; i++)
                PyBuffer_Release(&views[i]);
            Py_CLEAR(out);
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&ring_lock);
        if (ring_fd == -2 || (ring_fd >= 0 && ring_pid != getpid())) {
            ring_fd = ring_setup();
            ring_pid = getpid();
        }
        if (ring_fd < 0 || ring_send(m, fds, views, res) < 0) {
            ring_fd = -1;
            for (int i = 0; i < m; i++) {
                ssize_t r = send(fds[i], views[i].buf, (size_t)views[i].len, MSG_DONTWAIT | MSG_NOSIGNAL);
                res[i] = r < 0 ? -errno : (long)r;
            }
        }
        pthread_mutex_unlock(&ring_lock);
        Py_END_ALLOW_THREADS
        for (int i = 0; i < m; i++) {
            PyBuffer_Release(&views[i]);
            PyObject *v = PyLong_FromLong(res[i]);
            if (v == NULL) {
                Py_CLEAR(out);
                goto done;
            }
            PyList_SET_ITEM(out, start + i, v);
        }
    }
done:
    Py_DECREF(fseq);
    Py_DECREF(bseq);
    return out;
}

static PyObject *using_io_uring(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(unused))
{
    pthread_mutex_lock(&ring_lock);
    if (ring_fd == -2 || (ring_fd >= 0 && ring_pid != getpid())) {
        ring_fd = ring_setup();
        ring_pid = getpid();
    }
    pthread_mutex_unlock(&ring_lock);
    return PyBool_FromLong(ring_fd >= 0);
}

static PyObject *set_io_uring(PyObject *Py_UNUSED(self), PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    pthread_mutex_lock(&ring_lock);
    if (!on && ring_fd >= 0 && ring_pid == getpid()) {
        close(ring_fd);  /* (its mappings stay: a few pages, once) */
    }
    ring_fd = on ? -2 : -1;
    pthread_mutex_unlock(&ring_lock);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"send_many", send_many, METH_VARARGS, "send_many(fds, bufs) -> list of bytes written or -errno per socket"},
    {"using_io_uring", using_io_uring, METH_NOARGS, "Whether send_many submits through io_uring"},
    {"set_io_uring", set_io_uring, METH_O, "set_io_uring(False): send in a loop (tests, comparisons); True: try it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fanout", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fanout(void) { return PyModule_Create(&module); }
