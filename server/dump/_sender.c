/* Socket copies of concurrent dumps on a thread of their own, off the event loop (issue 12: both cores;
 * server/dump/sender.py).
 *
 * With many dumps streaming, most of the loop thread's time was the kernel copying framed bytes into sockets. This
 * module runs one POSIX thread that never takes the GIL: the loop submits (fd, address, length, token) jobs, the
 * thread does one non-blocking send() per job, closes the descriptor it was given (a duplicate the caller made: the
 * transport may close its own meanwhile, and a reused number must never get these bytes) and posts (token, result)
 * to a completion list, waking the loop through an eventfd. The caller keeps the bytes alive until the completion.
 *
 * start() -> eventfd (the thread is made once per process; a forked child makes its own)
 * submit(fd, buffer, token): queue a send of the whole buffer; `fd` is owned by the thread from here on
 * reap() -> list[(token, result)]: the completions so far (result: bytes sent, or -errno; -EAGAIN: none)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct Job {
    struct Job *next;
    int fd;
    const char *buf;
    size_t len;
    long long token;
    long result;
} Job;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static Job *todo_head, *todo_tail, *done_head, *done_tail;
static int efd = -1;
static pid_t owner;

static void push(Job **head, Job **tail, Job *j) {
    j->next = NULL;
    if (*tail) (*tail)->next = j;
    else *head = j;
    *tail = j;
}

static void *run(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (todo_head == NULL) pthread_cond_wait(&wake, &lock);
        Job *batch = todo_head;
        todo_head = todo_tail = NULL;
        pthread_mutex_unlock(&lock);
        Job *out_head = NULL, *out_tail = NULL;
        while (batch) {
            Job *j = batch;
            batch = j->next;
            ssize_t r = send(j->fd, j->buf, j->len, MSG_DONTWAIT | MSG_NOSIGNAL);
            j->result = r < 0 ? -errno : (long)r;
            close(j->fd);
            push(&out_head, &out_tail, j);
        }
        pthread_mutex_lock(&lock);
        if (out_head) {
            if (done_tail) done_tail->next = out_head;
            else done_head = out_head;
            done_tail = out_tail;
        }
        uint64_t one = 1;
        ssize_t w = write(efd, &one, sizeof one);
        (void)w;
    }
    return NULL;
}

static PyObject *start(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(unused)) {
    pthread_mutex_lock(&lock);
    if (efd < 0 || owner != getpid()) {
        todo_head = todo_tail = done_head = done_tail = NULL;  /* (a forked child: the parent's jobs are not ours) */
        int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (fd < 0 || pthread_create(&t, &attr, run, NULL) != 0) {
            int e = fd < 0 ? errno : EAGAIN;
            if (fd >= 0) close(fd);
            pthread_attr_destroy(&attr);
            pthread_mutex_unlock(&lock);
            errno = e;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        pthread_attr_destroy(&attr);
        efd = fd;
        owner = getpid();
    }
    int fd = efd;
    pthread_mutex_unlock(&lock);
    return PyLong_FromLong(fd);
}

static PyObject *submit(PyObject *Py_UNUSED(self), PyObject *args) {
    int fd;
    Py_buffer view;
    long long token;
    if (!PyArg_ParseTuple(args, "iy*L:submit", &fd, &view, &token)) return NULL;
    Job *j = malloc(sizeof *j);
    if (j == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    /* the caller holds the object until reap() gives this token back: the address stays valid */
    j->fd = fd;
    j->buf = view.buf;
    j->len = (size_t)view.len;
    j->token = token;
    PyBuffer_Release(&view);
    pthread_mutex_lock(&lock);
    if (efd < 0 || owner != getpid()) {
        pthread_mutex_unlock(&lock);
        free(j);
        PyErr_SetString(PyExc_RuntimeError, "_sender.start() was not called in this process");
        return NULL;
    }
    push(&todo_head, &todo_tail, j);
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    Py_RETURN_NONE;
}

static PyObject *reap(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(unused)) {
    uint64_t n;
    pthread_mutex_lock(&lock);
    if (efd >= 0) {
        ssize_t r = read(efd, &n, sizeof n);
        (void)r;
    }
    Job *j = done_head;
    done_head = done_tail = NULL;
    pthread_mutex_unlock(&lock);
    PyObject *out = PyList_New(0);
    while (j) {
        Job *next = j->next;
        if (out != NULL) {
            PyObject *item = Py_BuildValue("(Ll)", j->token, j->result);
            if (item == NULL || PyList_Append(out, item) < 0) Py_CLEAR(out);
            Py_XDECREF(item);
        }
        free(j);
        j = next;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"start", start, METH_NOARGS, "start() -> eventfd: the sender thread of this process (made once)"},
    {"submit", submit, METH_VARARGS, "submit(fd, buffer, token): send the buffer to fd from the thread, close fd"},
    {"reap", reap, METH_NOARGS, "reap() -> [(token, bytes sent or -errno)] completed so far"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sender", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sender(void) { return PyModule_Create(&module); }
